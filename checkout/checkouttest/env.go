// Package checkouttest runs the checkout service on the sandbox PG for
// tests: a Service on its own database and Redis prefix, the sandbox mounted
// under /sandbox-pg of a test server whose /payments/webhook hands webhooks
// to the service as the app's handler does, and the steps of a buyer.
package checkouttest

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
	"github.com/boxoffice/boxoffice/checkout"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
)

// The secrets and URLs of an Env's service, and the event's limit and hold
// TTL.
const (
	PGSecret     = "test_sk_checkout"
	TicketSecret = "ticket-secret-of-at-least-32-characters"
	SuccessURL   = "https://shop.example/payments/success"
	FailURL      = "https://shop.example/payments/fail"
	Limit        = boxoffice.DefaultMaxPerAccount
	HoldTTL      = time.Minute
)

// Clock is the database's clock (DB.Now): real time plus an offset that
// tests move forward to make orders expire. Redis keeps its own clock.
type Clock struct{ offset atomic.Int64 }

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// Env is a checkout Service on its own database and Redis prefix, with the
// sandbox PG (same database, its own schema) mounted under /sandbox-pg of a
// test server whose /payments/webhook hands webhooks to
// Service.ConfirmWebhook as the app's handler does. Checkout's PG is a
// Gateway around PG.
type Env struct {
	DB       *store.DB
	R        *store.Redis
	Holds    *store.Holds
	Orders   *store.Orders
	Checkout *checkout.Service
	PG       *toss.Client
	SB       *sandbox.Sandbox
	Clock    *Clock
	Event    storetest.Event
	srv      *httptest.Server
	// browser posts the sandbox's checkout form without following redirects.
	browser *http.Client

	mu       sync.Mutex
	webhooks []WebhookCall
}

// WebhookCall is one webhook the test server handled: the payment it
// named, the status it answered and the service's result.
type WebhookCall struct {
	PaymentKey string
	Status     int
	Result     *boxoffice.Confirmation
}

// Gateway is the PG the Service uses: the sandbox's client, whose refunds a
// test can make fail as if the PG were unreachable (CancelDown), and which
// counts the Service's confirms and look-ups (the PG's HTTP calls of a
// paid order: TestPaidOrder_RoundTrips).
type Gateway struct {
	*toss.Client
	CancelDown atomic.Bool
	// Confirms and LookUps count the calls of Confirm and GetPayment.
	Confirms, LookUps atomic.Int64
}

// Confirm is the client's, counted.
func (g *Gateway) Confirm(ctx context.Context, paymentKey, orderID string, amount boxoffice.Money) (*boxoffice.Payment, error) {
	g.Confirms.Add(1)
	return g.Client.Confirm(ctx, paymentKey, orderID, amount)
}

// GetPayment is the client's, counted.
func (g *Gateway) GetPayment(ctx context.Context, paymentKey string) (*boxoffice.Payment, error) {
	g.LookUps.Add(1)
	return g.Client.GetPayment(ctx, paymentKey)
}

// Cancel is the client's, or a connection error while CancelDown is set.
func (g *Gateway) Cancel(ctx context.Context, paymentKey string, r boxoffice.CancelRequest) (*boxoffice.Payment, error) {
	if g.CancelDown.Load() {
		return nil, fmt.Errorf("toss payments: POST cancel: %w", errors.New("dial tcp: connection refused"))
	}
	return g.Client.Cancel(ctx, paymentKey, r)
}

// New returns an env with an on-sale event of seats seats (R: 150,000 KRW
// in section A, S: 100,000 KRW in section B; limit 5).
func New(tb testing.TB, seats int) *Env {
	tb.Helper()
	env := &Env{DB: storetest.MustOpenDB(tb), R: storetest.MustOpenRedis(tb), Clock: &Clock{}}
	env.DB.Now = env.Clock.Now
	holds, err := store.NewHolds(env.DB, env.R, nil)
	if err != nil {
		tb.Fatal(err)
	}
	holds.MapMaxAge = 0
	env.Holds = holds
	env.Event = storetest.NewEvent(tb, env.DB, seats)

	mux := http.NewServeMux()
	mux.HandleFunc("POST /payments/webhook", env.serveWebhook)
	env.srv = httptest.NewServer(mux)
	tb.Cleanup(env.srv.Close)
	env.SB, err = sandbox.New(context.Background(), sandbox.Config{
		Provider:    sandbox.Provider,
		Pool:        env.DB.Pool,
		SecretKey:   PGSecret,
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

	env.PG = &toss.Client{BaseURL: env.srv.URL + "/sandbox-pg", SecretKey: PGSecret, HTTP: env.srv.Client()}
	env.Orders = env.NewOrders()
	env.Checkout = env.NewService(env.Orders, &Gateway{Client: env.PG})
	env.browser = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return env
}

// NewOrders returns an Orders of the env: another instance's.
func (env *Env) NewOrders() *store.Orders {
	return &store.Orders{DB: env.DB, Holds: env.Holds, TicketSecret: []byte(TicketSecret), Logger: slog.New(slog.DiscardHandler)}
}

// NewService returns a Service of the env on orders with its own PG:
// another instance's.
func (env *Env) NewService(orders *store.Orders, pg boxoffice.PaymentGateway) *checkout.Service {
	return &checkout.Service{
		Orders: orders, Refunds: &store.Refunds{DB: env.DB, Holds: env.Holds, Logger: slog.New(slog.DiscardHandler)}, PG: pg,
		SuccessURL: SuccessURL, FailURL: FailURL, Logger: slog.New(slog.DiscardHandler),
	}
}

// Gateway returns the PG of the env's Service.
func (env *Env) Gateway() *Gateway { return env.Checkout.PG.(*Gateway) }

// serveWebhook handles POST /payments/webhook as the app does: parse, then
// Service.ConfirmWebhook; 200 once handled, 400 for garbage, 5xx otherwise.
func (env *Env) serveWebhook(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, toss.MaxWebhookBytes+1))
	ev, err := toss.ParseWebhook(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, err := env.Checkout.ConfirmWebhook(r.Context(), ev.Data.PaymentKey, ev.Data.OrderID)
	status := http.StatusOK
	if err != nil {
		status = http.StatusServiceUnavailable
	}
	env.mu.Lock()
	env.webhooks = append(env.webhooks, WebhookCall{PaymentKey: ev.Data.PaymentKey, Status: status, Result: c})
	env.mu.Unlock()
	w.WriteHeader(status)
}

// WebhookCalls returns the webhooks handled for a payment, in order.
func (env *Env) WebhookCalls(paymentKey string) []WebhookCall {
	env.mu.Lock()
	defer env.mu.Unlock()
	var out []WebhookCall
	for _, c := range env.webhooks {
		if c.PaymentKey == paymentKey {
			out = append(out, c)
		}
	}
	return out
}

// Account returns a new fan account.
func (env *Env) Account(tb testing.TB) int64 { return storetest.NewAccount(tb, env.DB) }

// Order holds labels for the account and checks out.
func (env *Env) Order(tb testing.TB, acct int64, labels ...string) *boxoffice.Order {
	tb.Helper()
	req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: Limit, TTL: HoldTTL}
	if _, err := env.Holds.Hold(context.Background(), req, labels); err != nil {
		tb.Fatalf("account %d holds %v: %v", acct, labels, err)
	}
	o, err := env.Orders.CreateOrder(context.Background(), env.Event.ID, acct)
	if err != nil {
		tb.Fatalf("account %d checks out %v: %v", acct, labels, err)
	}
	return o
}

// Buyer is an account holding one seat, ready to check out (HoldOneEach).
type Buyer struct {
	Account int64
	Label   string
}

// HoldOneEach makes n new accounts, each holding one seat of the event (the
// i-th the event's i-th label), for a loop of paid orders.
func (env *Env) HoldOneEach(tb testing.TB, n int) []Buyer {
	tb.Helper()
	buyers := make([]Buyer, n)
	for i := range buyers {
		buyers[i] = Buyer{env.Account(tb), env.Event.Labels[i]}
		req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: buyers[i].Account, Limit: Limit, TTL: HoldTTL}
		if _, err := env.Holds.Hold(context.Background(), req, []string{buyers[i].Label}); err != nil {
			tb.Fatalf("account %d holds %s: %v", buyers[i].Account, buyers[i].Label, err)
		}
	}
	return buyers
}

// PayAll runs the whole paying path for each buyer, workers at a time, as
// fans do: the checkout (CreateOrder), the payment on the sandbox's
// checkout page, the success redirect's confirmation and the order's read,
// which must say CONFIRMED; each failure is reported to tb. It returns when
// every buyer is done (the sandbox's webhooks may still be on their way:
// env.SB.Wait).
func (env *Env) PayAll(tb testing.TB, buyers []Buyer, workers int) {
	work := make(chan Buyer)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for b := range work {
				o, err := env.Orders.CreateOrder(context.Background(), env.Event.ID, b.Account)
				if err != nil {
					tb.Error(err)
					continue
				}
				key, amount := env.Pay(tb, o, sandbox.ScenarioDefault)
				if _, err := env.Redirect(o.ID, key, amount); err != nil {
					tb.Error(err)
				}
				if got := env.FindOrder(tb, o.ID); got.Status != boxoffice.OrderConfirmed {
					tb.Errorf("order %s: %s", o.ID, got.Status)
				}
			}
		})
	}
	for _, b := range buyers {
		work <- b
	}
	close(work)
	wg.Wait()
}

// Pay pays for the order on the sandbox's checkout page under a scenario and
// returns the success redirect's payment key and amount.
func (env *Env) Pay(tb testing.TB, o *boxoffice.Order, scenario string) (string, int64) {
	tb.Helper()
	resp, err := env.browser.PostForm(env.srv.URL+"/sandbox-pg/checkout", url.Values{
		"orderId": {o.ID}, "amount": {strconv.FormatInt(o.Amount.Amount, 10)}, "orderName": {o.Name},
		"successUrl": {SuccessURL}, "failUrl": {FailURL}, "action": {"pay"}, "scenario": {scenario},
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

// Redirect is the buyer's success redirect: Confirm with its amount.
func (env *Env) Redirect(orderID, paymentKey string, amount int64) (*boxoffice.Confirmation, error) {
	return env.Checkout.Confirm(context.Background(), orderID, paymentKey, &amount)
}

// MustRedirect is Redirect, failing the test on an error.
func (env *Env) MustRedirect(tb testing.TB, orderID, paymentKey string, amount int64) *boxoffice.Confirmation {
	tb.Helper()
	c, err := env.Redirect(orderID, paymentKey, amount)
	if err != nil {
		tb.Fatalf("redirect of payment %s: %v", paymentKey, err)
	}
	return c
}

// PostWebhook sends a PAYMENT_STATUS_CHANGED webhook naming the payment to
// the test server, as the PG would, and returns the status.
func (env *Env) PostWebhook(tb testing.TB, p *boxoffice.Payment, createdAt time.Time) int {
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

// FindOrder returns the order, failing the test if it cannot.
func (env *Env) FindOrder(tb testing.TB, id string) *boxoffice.Order {
	tb.Helper()
	o, err := env.Orders.FindOrderByID(context.Background(), id)
	if err != nil {
		tb.Fatalf("FindOrderByID(%s): %v", id, err)
	}
	return o
}

// PGStatus returns the sandbox's status of a payment.
func (env *Env) PGStatus(tb testing.TB, paymentKey string) boxoffice.PaymentStatus {
	tb.Helper()
	p, err := env.PG.GetPayment(context.Background(), paymentKey)
	if err != nil {
		tb.Fatalf("GetPayment(%s): %v", paymentKey, err)
	}
	return p.Status
}

// Outcome returns the recorded outcome and reason of a payment ("" if none).
func (env *Env) Outcome(tb testing.TB, paymentKey string) (boxoffice.PaymentOutcome, string) {
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

// Count runs a count(*) query.
func (env *Env) Count(tb testing.TB, query string, args ...any) int {
	tb.Helper()
	var n int
	if err := env.DB.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

// Expire moves the clock past the payment window and runs the expiry.
func (env *Env) Expire(tb testing.TB) {
	tb.Helper()
	env.Clock.Advance(boxoffice.DefaultPaymentWindow + time.Second)
	if _, err := env.Orders.ExpireOrders(context.Background()); err != nil {
		tb.Fatalf("ExpireOrders: %v", err)
	}
}

// CheckInvariants asserts, after the sandbox delivered its webhooks, the
// rules that no interleaving may break (DESIGN rules 1 to 4):
//   - a CONFIRMED order has one confirmed payment, a sold seat and a live
//     ticket per item not refunded and one order.confirmed outbox row; any
//     other order has no live ticket, sold seat or confirmed payment, and
//     only a refunded one has that outbox row;
//   - every account's purchase_count is its live tickets, within the limit;
//   - every payment the PG holds as DONE for our orders is recorded as
//     confirmed or refund_pending (no money kept without tickets), every
//     confirmed payment is DONE at the PG and every refunded one CANCELED.
func (env *Env) CheckInvariants(tb testing.TB) {
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
		if n := env.Count(tb, c.query); n != 0 {
			tb.Errorf("invariant broken: %d %s", n, c.what)
		}
	}
}

// WantOrder checks an order's status and failure code.
func WantOrder(tb testing.TB, o *boxoffice.Order, status boxoffice.OrderStatus, failure string) {
	tb.Helper()
	if o.Status != status || o.FailureCode != failure {
		tb.Errorf("order %s: status %s, failure %q (%s); want %s, %q", o.ID, o.Status, o.FailureCode, o.FailureMessage, status, failure)
	}
}

// TicketIDs lists an order's ticket ids.
func TicketIDs(o *boxoffice.Order) []string {
	out := make([]string, len(o.Tickets))
	for i, t := range o.Tickets {
		out[i] = t.ID
	}
	return out
}

// MyHolds returns the account's holds of the event and their time left.
func (env *Env) MyHolds(tb testing.TB, acct int64) ([]string, time.Duration) {
	tb.Helper()
	labels, ttl, err := env.Holds.MyHolds(context.Background(), env.Event.ID, acct)
	if err != nil {
		tb.Fatal(err)
	}
	return labels, ttl
}
