package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// commitCounter is a pgx tracer that counts, on a pool, the statements sent
// (BEGIN, COMMIT, ROLLBACK and SET LOCAL left out), whether alone or in a
// batch, and the commits that write: those that wait for the WAL's flush
// (every COMMIT, and every INSERT, UPDATE or DELETE sent outside a
// transaction), and apart those of transactions that set
// synchronous_commit off, which do not wait. A transaction that only reads
// commits without a flush and is not counted; the sandbox's are all
// explicit transactions that write or single statements.
type commitCounter struct {
	mu                                  sync.Mutex
	inTx, noFlush                       map[*pgx.Conn]bool
	commits, noFlushCommits, statements int
	trips                               int
}

func (c *commitCounter) count(conn *pgx.Conn, sql string) {
	sql = strings.ToLower(strings.TrimSpace(sql))
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasPrefix(sql, "begin"):
		c.inTx[conn] = true
	case sql == "set local synchronous_commit = off":
		c.noFlush[conn] = true
	case sql == "commit" && c.noFlush[conn]:
		c.noFlushCommits++
		delete(c.inTx, conn)
		delete(c.noFlush, conn)
	case sql == "commit":
		c.commits++
		delete(c.inTx, conn)
	case sql == "rollback":
		delete(c.inTx, conn)
		delete(c.noFlush, conn)
	default:
		c.statements++
		if !c.inTx[conn] && (strings.HasPrefix(sql, "insert") || strings.HasPrefix(sql, "update") || strings.HasPrefix(sql, "delete")) {
			c.commits++
		}
	}
}

// trip counts a round trip: a statement sent alone, or a batch.
func (c *commitCounter) trip() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
}

func (c *commitCounter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.trip()
	c.count(conn, d.SQL)
	return ctx
}

func (c *commitCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *commitCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.trip()
	return ctx
}

func (c *commitCounter) TraceBatchQuery(_ context.Context, conn *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.count(conn, d.SQL)
}

func (c *commitCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// counts returns the commits (waiting for the flush, and not), statements
// and round trips counted so far.
func (c *commitCounter) counts() step {
	c.mu.Lock()
	defer c.mu.Unlock()
	return step{commits: c.commits, noFlush: c.noFlushCommits, statements: c.statements, trips: c.trips}
}

// step is what a step of a payment cost the sandbox's pool.
type step struct {
	name                                string
	commits, noFlush, statements, trips int
}

// since returns what was counted between t and s.
func (s step) since(t step) step {
	return step{name: s.name, commits: s.commits - t.commits, noFlush: s.noFlush - t.noFlush,
		statements: s.statements - t.statements, trips: s.trips - t.trips}
}

// newCountedHarness is newHarness with the sandbox on a pool of its own on
// the harness's database, traced by the returned counter.
func newCountedHarness(t *testing.T) (*harness, *commitCounter) {
	t.Helper()
	db := storetest.MustOpenDB(t)
	c := &commitCounter{inTx: map[*pgx.Conn]bool{}, noFlush: map[*pgx.Conn]bool{}}
	cfg := db.Pool.Config()
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return newHarnessOn(t, db, func(cfg *sandbox.Config) { cfg.Pool = pool }), c
}

// The sandbox's commits per payment on the database it shares with the store
// (docs/performance.md, "The sandbox PG's commits"), with its statements and
// round trips: the checkout page's payment (one INSERT, its own transaction);
// the confirm (the Idempotency-Key claimed with BEGIN, the payment's UPDATE,
// then its webhook written already leased, the answer stored and COMMIT in one
// batch); the webhook's delivered mark, whose commit does not wait for the WAL's
// flush (the sandbox may forget it in a crash and send the webhook again). A
// late webhook reads its row and takes its lease when due, one commit more. The
// confirm and its webhooks are counted together, since the delivery starts
// before the confirm's answer is sent. A look-up is one statement, no
// transaction. A change that brings a commit, a statement or a round trip back
// fails here; checkout's TestPaidOrder_RoundTrips counts the store's side.
func TestSandbox_CommitsPerPayment(t *testing.T) {
	for _, tt := range []struct {
		scenario string
		webhooks []string
		want     []step // commits waiting for the flush, commits not waiting, statements, round trips
	}{
		{sandbox.ScenarioDefault, []string{"DONE"}, []step{{"checkout", 1, 0, 1, 1}, {"confirm and webhook", 1, 1, 5, 4}, {"look-up", 0, 0, 1, 1}}},
		{sandbox.ScenarioWebhookNever, nil, []step{{"checkout", 1, 0, 1, 1}, {"confirm and webhook", 1, 0, 3, 3}, {"look-up", 0, 0, 1, 1}}},
		{sandbox.ScenarioWebhookLate, []string{"DONE"}, []step{{"checkout", 1, 0, 1, 1}, {"confirm and webhook", 2, 1, 7, 6}, {"look-up", 0, 0, 1, 1}}},
	} {
		t.Run(fmt.Sprintf("scenario=%q", tt.scenario), func(t *testing.T) {
			h, counter := newCountedHarness(t)
			h.sb.Wait() // the start-up's look for undelivered webhooks
			for round := range 3 {
				orderID := fmt.Sprintf("order-commits-%d", round)
				c0 := counter.counts()
				key := h.pay(t, orderID, 5000, tt.scenario).Get("paymentKey")
				c1 := counter.counts()
				mustConfirm(t, h, key, orderID, 5000)
				h.sb.Wait()
				c2 := counter.counts()
				wantWebhooks(t, h, key, tt.webhooks...)
				if _, err := h.client.GetPayment(context.Background(), key); err != nil {
					t.Fatalf("GetPayment: %v", err)
				}
				c3 := counter.counts()
				got := []step{c1.since(c0), c2.since(c1), c3.since(c2)}
				for i, g := range got {
					g.name = tt.want[i].name
					if g != tt.want[i] {
						t.Errorf("round %d, %s: %d commits (and %d not waiting for the flush), %d statements, %d round trips; want %d (%d), %d, %d",
							round, g.name, g.commits, g.noFlush, g.statements, g.trips,
							tt.want[i].commits, tt.want[i].noFlush, tt.want[i].statements, tt.want[i].trips)
					}
				}
			}
		})
	}
}
