package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
)

const (
	pgSecret     = "test_sk_checkout"
	ticketSecret = "ticket-secret-of-at-least-32-characters"
	successURL   = "https://shop.example/payments/success"
	failURL      = "https://shop.example/payments/fail"
)

// testClock is the database's clock (DB.Now): real time plus an offset that
// tests move forward to make orders expire. Redis keeps its own clock.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// checkoutEnv is an Orders on its own database and Redis prefix, with the
// sandbox PG (same database, its own tables) mounted under /sandbox-pg of a
// test server whose /payments/webhook hands webhooks to Orders.ConfirmWebhook
// as the app's handler does.
type checkoutEnv struct {
	DB     *store.DB
	R      *store.Redis
	Holds  *store.Holds
	Orders *store.Orders
	PG     *toss.Client
	SB     *sandbox.Sandbox
	Clock  *testClock
	Event  fixtureEvent
	srv    *httptest.Server
	// browser posts the sandbox's checkout form without following redirects.
	browser *http.Client

	mu       sync.Mutex
	webhooks []webhookCall
}

// webhookCall is one webhook the test server handled.
type webhookCall struct {
	paymentKey string
	status     int
	result     *boxoffice.Confirmation
}

// gateway is the PG the Orders uses: the sandbox's client, whose refunds a
// test can make fail as if the PG were unreachable.
type gateway struct {
	*toss.Client
	cancelDown atomic.Bool
}

func (g *gateway) Cancel(ctx context.Context, paymentKey string, r boxoffice.CancelRequest) (*boxoffice.Payment, error) {
	if g.cancelDown.Load() {
		return nil, fmt.Errorf("toss payments: POST cancel: %w", errors.New("dial tcp: connection refused"))
	}
	return g.Client.Cancel(ctx, paymentKey, r)
}

// newCheckoutEnv returns an env with an on-sale event of seats seats (R:
// 150,000 KRW in section A, S: 100,000 KRW in section B; limit 5).
func newCheckoutEnv(tb testing.TB, seats int) *checkoutEnv {
	tb.Helper()
	env := &checkoutEnv{DB: storetest.MustOpenDB(tb), R: storetest.MustOpenRedis(tb), Clock: &testClock{}}
	env.DB.Now = env.Clock.now
	holds, err := store.NewHolds(env.DB, env.R, nil)
	if err != nil {
		tb.Fatal(err)
	}
	holds.MapMaxAge = 0
	env.Holds = holds
	env.Event = newHoldEvent(tb, env.DB, seats)

	mux := http.NewServeMux()
	mux.HandleFunc("POST /payments/webhook", env.serveWebhook)
	env.srv = httptest.NewServer(mux)
	tb.Cleanup(env.srv.Close)
	env.SB, err = sandbox.New(context.Background(), sandbox.Config{
		Provider:    sandbox.Provider,
		Pool:        env.DB.Pool,
		SecretKey:   pgSecret,
		WebhookURL:  env.srv.URL + "/payments/webhook",
		LateDelay:   100 * time.Millisecond,
		RetryDelays: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond},
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { env.SB.Close() }) // before the database closes (registered earlier)
	mux.Handle("/sandbox-pg/", http.StripPrefix("/sandbox-pg", env.SB))

	env.PG = &toss.Client{BaseURL: env.srv.URL + "/sandbox-pg", SecretKey: pgSecret, HTTP: env.srv.Client()}
	env.Orders = env.newOrders(&gateway{Client: env.PG})
	env.browser = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return env
}

// newOrders returns an Orders of the env with its own PG: another instance
// of the service.
func (env *checkoutEnv) newOrders(pg boxoffice.PaymentGateway) *store.Orders {
	return &store.Orders{
		DB: env.DB, Holds: env.Holds, PG: pg, TicketSecret: []byte(ticketSecret),
		SuccessURL: successURL, FailURL: failURL, Logger: slog.New(slog.DiscardHandler),
	}
}

func (env *checkoutEnv) gateway() *gateway { return env.Orders.PG.(*gateway) }

// serveWebhook handles POST /payments/webhook as the app does: parse, then
// ConfirmWebhook; 200 once handled, 400 for garbage, 5xx otherwise.
func (env *checkoutEnv) serveWebhook(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, toss.MaxWebhookBytes+1))
	ev, err := toss.ParseWebhook(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, err := env.Orders.ConfirmWebhook(r.Context(), ev.Data.PaymentKey, ev.Data.OrderID)
	status := http.StatusOK
	if err != nil {
		status = http.StatusServiceUnavailable
	}
	env.mu.Lock()
	env.webhooks = append(env.webhooks, webhookCall{paymentKey: ev.Data.PaymentKey, status: status, result: c})
	env.mu.Unlock()
	w.WriteHeader(status)
}

// webhookCalls returns the webhooks handled for a payment, in order.
func (env *checkoutEnv) webhookCalls(paymentKey string) []webhookCall {
	env.mu.Lock()
	defer env.mu.Unlock()
	var out []webhookCall
	for _, c := range env.webhooks {
		if c.paymentKey == paymentKey {
			out = append(out, c)
		}
	}
	return out
}

func (env *checkoutEnv) account(tb testing.TB) int64 { return newHoldAccount(tb, env.DB) }

// order holds labels for the account and checks out.
func (env *checkoutEnv) order(tb testing.TB, acct int64, labels ...string) *boxoffice.Order {
	tb.Helper()
	req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
	if _, err := env.Holds.Hold(context.Background(), req, labels); err != nil {
		tb.Fatalf("account %d holds %v: %v", acct, labels, err)
	}
	o, err := env.Orders.CreateOrder(context.Background(), env.Event.ID, acct)
	if err != nil {
		tb.Fatalf("account %d checks out %v: %v", acct, labels, err)
	}
	return o
}

// pay pays for the order on the sandbox's checkout page under a scenario and
// returns the success redirect's payment key and amount.
func (env *checkoutEnv) pay(tb testing.TB, o *boxoffice.Order, scenario string) (string, int64) {
	tb.Helper()
	resp, err := env.browser.PostForm(env.srv.URL+"/sandbox-pg/checkout", url.Values{
		"orderId": {o.ID}, "amount": {strconv.FormatInt(o.Amount, 10)}, "orderName": {o.Name},
		"successUrl": {successURL}, "failUrl": {failURL}, "action": {"pay"}, "scenario": {scenario},
	})
	if err != nil {
		tb.Fatalf("pay order %s: %v", o.ID, err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil {
		tb.Fatalf("pay order %s: status %d, Location %q", o.ID, resp.StatusCode, resp.Header.Get("Location"))
	}
	q := loc.Query()
	amount, err := strconv.ParseInt(q.Get("amount"), 10, 64)
	if err != nil || q.Get("paymentKey") == "" || q.Get("orderId") != o.ID {
		tb.Fatalf("pay order %s: redirect %s", o.ID, loc)
	}
	return q.Get("paymentKey"), amount
}

// redirect is the buyer's success redirect: Confirm with its amount.
func (env *checkoutEnv) redirect(orderID, paymentKey string, amount int64) (*boxoffice.Confirmation, error) {
	return env.Orders.Confirm(context.Background(), orderID, paymentKey, &amount)
}

func (env *checkoutEnv) mustRedirect(tb testing.TB, orderID, paymentKey string, amount int64) *boxoffice.Confirmation {
	tb.Helper()
	c, err := env.redirect(orderID, paymentKey, amount)
	if err != nil {
		tb.Fatalf("redirect of payment %s: %v", paymentKey, err)
	}
	return c
}

// postWebhook sends a PAYMENT_STATUS_CHANGED webhook naming the payment to
// the test server, as the PG would, and returns the status.
func (env *checkoutEnv) postWebhook(tb testing.TB, p *boxoffice.Payment, createdAt time.Time) int {
	tb.Helper()
	body := fmt.Sprintf(`{"eventType":"PAYMENT_STATUS_CHANGED","createdAt":%q,"data":{"paymentKey":%q,"orderId":%q,"status":"DONE","totalAmount":1}}`,
		createdAt.Format(toss.WebhookCreatedAtLayout), p.PaymentKey, p.OrderID)
	resp, err := http.Post(env.srv.URL+"/payments/webhook", "application/json", strings.NewReader(body))
	if err != nil {
		tb.Errorf("post webhook: %v", err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (env *checkoutEnv) findOrder(tb testing.TB, id string) *boxoffice.Order {
	tb.Helper()
	o, err := env.Orders.FindOrderByID(context.Background(), id)
	if err != nil {
		tb.Fatalf("FindOrderByID(%s): %v", id, err)
	}
	return o
}

// pgStatus returns the sandbox's status of a payment.
func (env *checkoutEnv) pgStatus(tb testing.TB, paymentKey string) boxoffice.PaymentStatus {
	tb.Helper()
	p, err := env.PG.GetPayment(context.Background(), paymentKey)
	if err != nil {
		tb.Fatalf("GetPayment(%s): %v", paymentKey, err)
	}
	return p.Status
}

// outcome returns the recorded outcome and reason of a payment ("" if none).
func (env *checkoutEnv) outcome(tb testing.TB, paymentKey string) (boxoffice.PaymentOutcome, string) {
	tb.Helper()
	var outcome boxoffice.PaymentOutcome
	var reason string
	err := env.DB.Pool.QueryRow(context.Background(), `SELECT outcome, reason FROM payment WHERE payment_key = $1`, paymentKey).
		Scan(&outcome, &reason)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		tb.Fatal(err)
	}
	return outcome, reason
}

// count runs a count(*) query.
func (env *checkoutEnv) count(tb testing.TB, query string, args ...any) int {
	tb.Helper()
	var n int
	if err := env.DB.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

// expire moves the clock past the payment window and runs the expiry.
func (env *checkoutEnv) expire(tb testing.TB) {
	tb.Helper()
	env.Clock.advance(boxoffice.DefaultPaymentWindow + time.Second)
	if _, err := env.Orders.ExpireOrders(context.Background()); err != nil {
		tb.Fatalf("ExpireOrders: %v", err)
	}
}

// checkInvariants asserts, after the sandbox delivered its webhooks, the
// rules that no interleaving may break (DESIGN rules 1 to 4):
//   - a CONFIRMED order has one confirmed payment, a sold seat and a live
//     ticket per item not refunded and one order.confirmed outbox row; any
//     other order has no live ticket, sold seat or confirmed payment, and
//     only a refunded one has that outbox row;
//   - every account's purchase_count is its live tickets, within the limit;
//   - every payment the PG holds as DONE for our orders is recorded as
//     confirmed or refund_pending (no money kept without tickets), every
//     confirmed payment is DONE at the PG and every refunded one CANCELED.
func (env *checkoutEnv) checkInvariants(tb testing.TB) {
	tb.Helper()
	env.SB.Wait()
	checks := []struct {
		what  string
		query string
	}{
		{"confirmed orders without exactly one confirmed payment", `
			SELECT count(*) FROM orders o WHERE o.status = 'CONFIRMED'
			  AND (SELECT count(*) FROM payment p WHERE p.order_id = o.id AND p.outcome = 'confirmed') <> 1`},
		{"confirmed orders whose live tickets or sold seats differ from their items not refunded", `
			WITH kept AS (SELECT i.* FROM order_item i WHERE NOT EXISTS (
			  SELECT 1 FROM refund_item ri JOIN refund r ON r.id = ri.refund_id
			  WHERE ri.order_id = i.order_id AND ri.seat_label = i.seat_label AND r.status = 'done'))
			SELECT count(*) FROM orders o WHERE o.status = 'CONFIRMED' AND (
			  (SELECT count(*) FROM ticket t WHERE t.order_id = o.id AND t.refunded_at IS NULL) <> (SELECT count(*) FROM kept i WHERE i.order_id = o.id)
			  OR (SELECT count(*) FROM sold_seat s WHERE s.order_id = o.id) <> (SELECT count(*) FROM kept i WHERE i.order_id = o.id)
			  OR EXISTS (SELECT 1 FROM kept i WHERE i.order_id = o.id AND NOT EXISTS (
			       SELECT 1 FROM sold_seat s JOIN ticket t ON t.event_id = s.event_id AND t.seat_label = s.seat_label AND t.refunded_at IS NULL
			       WHERE s.order_id = o.id AND t.order_id = o.id AND s.seat_label = i.seat_label)))`},
		{"confirmed orders without exactly one order.confirmed outbox row", `
			SELECT count(*) FROM orders o WHERE o.status = 'CONFIRMED'
			  AND (SELECT count(*) FROM outbox x WHERE x.payload->>'order_id' = o.id AND x.topic = 'order.confirmed') <> 1`},
		{"unconfirmed orders with live tickets, sold seats or confirmed payments, or unrefunded ones with an outbox row", `
			SELECT count(*) FROM orders o WHERE o.status <> 'CONFIRMED' AND (
			  EXISTS (SELECT 1 FROM ticket t WHERE t.order_id = o.id AND t.refunded_at IS NULL) OR EXISTS (SELECT 1 FROM sold_seat s WHERE s.order_id = o.id)
			  OR EXISTS (SELECT 1 FROM payment p WHERE p.order_id = o.id AND p.outcome = 'confirmed')
			  OR (NOT EXISTS (SELECT 1 FROM refund r WHERE r.order_id = o.id AND r.status = 'done')
			      AND EXISTS (SELECT 1 FROM outbox x WHERE x.payload->>'order_id' = o.id)))`},
		{"purchase counts that are not the live tickets, or pass the limit", `
			SELECT count(*) FROM purchase_count pc JOIN event e ON e.id = pc.event_id
			WHERE pc.tickets > e.max_per_account OR pc.tickets <> (
			  SELECT count(*) FROM ticket t JOIN orders o ON o.id = t.order_id
			  WHERE o.event_id = pc.event_id AND o.account_id = pc.account_id AND t.refunded_at IS NULL)`},
		{"payments DONE at the PG that are neither confirmed nor being refunded", `
			SELECT count(*) FROM sandbox_pg.sandbox_pg_payment sp WHERE sp.status IN ('DONE', 'PARTIAL_CANCELED') AND NOT EXISTS (
			  SELECT 1 FROM payment p WHERE p.payment_key = sp.payment_key AND p.outcome IN ('confirmed', 'refund_pending'))`},
		{"confirmed payments whose balance at the PG is not their tickets' price, or refunded ones not CANCELED", `
			SELECT count(*) FROM payment p JOIN sandbox_pg.sandbox_pg_payment sp ON sp.payment_key = p.payment_key
			WHERE (p.outcome = 'confirmed' AND sp.balance_amount <> p.amount - (
			         SELECT COALESCE(sum(r.amount), 0) FROM refund r WHERE r.payment_key = p.payment_key AND r.status = 'done'))
			   OR (p.outcome = 'refunded' AND sp.status <> 'CANCELED')`},
	}
	for _, c := range checks {
		if n := env.count(tb, c.query); n != 0 {
			tb.Errorf("invariant broken: %d %s", n, c.what)
		}
	}
}

// wantOrder checks an order's status and failure code.
func wantOrder(tb testing.TB, o *boxoffice.Order, status boxoffice.OrderStatus, failure string) {
	tb.Helper()
	if o.Status != status || o.FailureCode != failure {
		tb.Errorf("order %s: status %s, failure %q (%s); want %s, %q", o.ID, o.Status, o.FailureCode, o.FailureMessage, status, failure)
	}
}

// ticketIDs lists an order's ticket ids.
func ticketIDs(o *boxoffice.Order) []string {
	out := make([]string, len(o.Tickets))
	for i, t := range o.Tickets {
		out[i] = t.ID
	}
	return out
}
