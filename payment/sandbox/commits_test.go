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
// (BEGIN, COMMIT and ROLLBACK left out) and the commits that write, each of
// which waits for the WAL's flush: every COMMIT, and every INSERT, UPDATE or
// DELETE sent outside a transaction. A transaction that only reads commits
// without a flush and is not counted; the sandbox's are all explicit
// transactions that write or single statements.
type commitCounter struct {
	mu                  sync.Mutex
	inTx                map[*pgx.Conn]bool
	commits, statements int
}

func (c *commitCounter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	sql := strings.ToLower(strings.TrimSpace(d.SQL))
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasPrefix(sql, "begin"):
		c.inTx[conn] = true
	case sql == "commit":
		c.commits++
		delete(c.inTx, conn)
	case sql == "rollback":
		delete(c.inTx, conn)
	default:
		c.statements++
		if !c.inTx[conn] && (strings.HasPrefix(sql, "insert") || strings.HasPrefix(sql, "update") || strings.HasPrefix(sql, "delete")) {
			c.commits++
		}
	}
	return ctx
}

func (c *commitCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// counts returns the commits and statements counted so far.
func (c *commitCounter) counts() (commits, statements int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits, c.statements
}

// newCountedHarness is newHarness with the sandbox on a pool of its own on
// the harness's database, traced by the returned counter.
func newCountedHarness(t *testing.T) (*harness, *commitCounter) {
	t.Helper()
	db := storetest.MustOpenDB(t)
	c := &commitCounter{inTx: map[*pgx.Conn]bool{}}
	cfg := db.Pool.Config()
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return newHarnessOn(t, db, func(cfg *sandbox.Config) { cfg.Pool = pool }), c
}

// The sandbox's commits per payment, each a wait for the WAL's flush on the
// database it shares with the store (README, "The sandbox PG's commits"):
// the checkout page's payment; the confirm (the Idempotency-Key claimed,
// the payment and its webhook written and the answer stored, in one
// transaction, the webhook written already leased); the
// webhook's delivered mark. A late webhook reads its row and takes its lease
// when due, one commit more. The confirm and its webhooks are counted
// together, since the delivery starts before the confirm's answer is sent.
// A change that brings a commit or a statement back fails here; checkout's
// TestPaidOrder_RoundTrips counts the store's side.
func TestSandbox_CommitsPerPayment(t *testing.T) {
	type step struct {
		name                string
		commits, statements int
	}
	for _, tt := range []struct {
		scenario string
		webhooks []string
		want     []step
	}{
		{sandbox.ScenarioDefault, []string{"DONE"}, []step{{"checkout", 1, 1}, {"confirm and webhook", 2, 5}}},
		{sandbox.ScenarioWebhookNever, nil, []step{{"checkout", 1, 1}, {"confirm and webhook", 1, 3}}},
		{sandbox.ScenarioWebhookLate, []string{"DONE"}, []step{{"checkout", 1, 1}, {"confirm and webhook", 3, 7}}},
	} {
		t.Run(fmt.Sprintf("scenario=%q", tt.scenario), func(t *testing.T) {
			h, counter := newCountedHarness(t)
			h.sb.Wait() // the start-up's look for undelivered webhooks
			for round := range 3 {
				orderID := fmt.Sprintf("order-commits-%d", round)
				c0, s0 := counter.counts()
				key := h.pay(t, orderID, 5000, tt.scenario).Get("paymentKey")
				c1, s1 := counter.counts()
				mustConfirm(t, h, key, orderID, 5000)
				h.sb.Wait()
				c2, s2 := counter.counts()
				wantWebhooks(t, h, key, tt.webhooks...)
				got := []step{{"checkout", c1 - c0, s1 - s0}, {"confirm and webhook", c2 - c1, s2 - s1}}
				for i, g := range got {
					if g != tt.want[i] {
						t.Errorf("round %d, %s: %d commits and %d statements, want %d and %d",
							round, g.name, g.commits, g.statements, tt.want[i].commits, tt.want[i].statements)
					}
				}
			}
		})
	}
}
