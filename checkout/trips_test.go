package checkout_test

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
)

// The round trips to PostgreSQL of one paid order, step by step, as the app
// makes them (docs/performance.md, "Where the paying phase waits"): the checkout
// (CreateOrder), the success redirect's confirmation, the PG's webhook for the
// same payment, and the order page; and the app's HTTP calls to the PG (confirms
// and look-ups) in each. The sandbox PG's own statements are not counted here (a
// pool of their own): payment/sandbox's TestSandbox_CommitsPerPayment counts its
// commits and statements per payment. The wants are what each step costs now, in
// round trips and in statements (docs/performance.md, "PostgreSQL's work per
// paid order") and in calls to the PG (docs/performance.md, "The paying path's
// CPU in the server": the webhook of a payment recorded confirmed looks nothing
// up): a change that adds one fails here.
func TestPaidOrder_RoundTrips(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 4)
	trips := env.CountTrips(t, 0)
	ctx := context.Background()
	pg := env.Gateway()
	steps := []struct {
		name             string
		want, statements int64
		pgCalls          int64
	}{{"checkout", 2, 5, 0}, {"confirmation", 3, 8, 2}, {"webhook", 1, 2, 0}, {"order page", 1, 2, 0}}
	pgCalls := func() int64 { return pg.Confirms.Load() + pg.LookUps.Load() }
	// The first order warms the statement caches and the sold-seat copy;
	// the second is counted.
	for round, seat := range []string{env.Event.R[0], env.Event.R[1]} {
		acct := env.Account(t)
		if _, err := env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: checkouttest.Limit, TTL: checkouttest.HoldTTL}, []string{seat}); err != nil {
			t.Fatal(err)
		}
		got := make([]checkouttest.TripsSnapshot, len(steps))
		gotPG := make([]int64, len(steps))
		before, pgBefore := trips.Snapshot(), pgCalls()
		o, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct)
		if err != nil {
			t.Fatal(err)
		}
		got[0], gotPG[0] = trips.Snapshot().Sub(before), pgCalls()-pgBefore
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		before, pgBefore = trips.Snapshot(), pgCalls()
		c := env.MustRedirect(t, o.ID, key, amount)
		got[1], gotPG[1] = trips.Snapshot().Sub(before), pgCalls()-pgBefore
		before, pgBefore = trips.Snapshot(), pgCalls()
		if status := env.PostWebhook(t, &boxoffice.Payment{PaymentKey: key, OrderID: o.ID}, env.Clock.Now()); status != http.StatusOK {
			t.Fatalf("webhook: status %d", status)
		}
		got[2], gotPG[2] = trips.Snapshot().Sub(before), pgCalls()-pgBefore
		before, pgBefore = trips.Snapshot(), pgCalls()
		page := env.FindOrder(t, o.ID)
		got[3], gotPG[3] = trips.Snapshot().Sub(before), pgCalls()-pgBefore
		checkouttest.WantOrder(t, c.Order, boxoffice.OrderConfirmed, "")
		checkouttest.WantOrder(t, page, boxoffice.OrderConfirmed, "")
		if len(page.Tickets) != 1 || c.Outcome != boxoffice.PaymentConfirmed {
			t.Fatalf("order %s: %d tickets, outcome %q", o.ID, len(page.Tickets), c.Outcome)
		}
		if round == 0 {
			continue
		}
		var total, want, statements int64
		for i, s := range steps {
			t.Logf("%s: %d round trips, %d statements, %d connections acquired, held %v; %d calls to the PG", s.name, got[i].RoundTrips, got[i].Statements, got[i].Acquires, got[i].Held, gotPG[i])
			if gotPG[i] != s.pgCalls {
				t.Errorf("%s: %d calls to the PG, want %d", s.name, gotPG[i], s.pgCalls)
			}
			if got[i].RoundTrips != s.want {
				t.Errorf("%s: %d round trips to PostgreSQL, want %d", s.name, got[i].RoundTrips, s.want)
			}
			if got[i].Statements != s.statements {
				t.Errorf("%s: %d statements, want %d", s.name, got[i].Statements, s.statements)
			}
			total, want, statements = total+got[i].RoundTrips, want+s.want, statements+got[i].Statements
		}
		t.Logf("a paid order: %d round trips (want %d), %d statements", total, want, statements)
	}
	env.CheckInvariants(t)
}

// The confirmation's result of a sale is made from what its commit wrote,
// not read again (store.Orders.sell): it must be the order as read back,
// field for field, tickets in the order of the seat map (row, then number:
// A-1-2 before A-1-10, which byte order puts first) with their codes, and
// the payment confirmed; the webhook's and the order page's reads agree.
func TestPaidOrder_ResultAsRead(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 120)
	ctx := context.Background()
	acct := env.Account(t)
	seats := []string{env.Event.R[50], env.Event.R[9], env.Event.R[1]} // A-2-1, A-1-10, A-1-2
	if _, err := env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: checkouttest.Limit, TTL: checkouttest.HoldTTL}, seats); err != nil {
		t.Fatal(err)
	}
	o, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct)
	if err != nil {
		t.Fatal(err)
	}
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	c := env.MustRedirect(t, o.ID, key, amount)
	read := env.FindOrder(t, o.ID)
	if c.Outcome != boxoffice.PaymentConfirmed || c.Reason != "" || c.PaymentKey != key {
		t.Fatalf("result: outcome %q, reason %q, payment %q", c.Outcome, c.Reason, c.PaymentKey)
	}
	if !reflect.DeepEqual(c.Order, read) {
		t.Fatalf("the sale's result differs from the order read back:\n got %+v\nread %+v", c.Order, read)
	}
	var order []string
	for _, tk := range read.Tickets {
		order = append(order, tk.Seat)
	}
	if want := []string{env.Event.R[1], env.Event.R[9], env.Event.R[50]}; !slices.Equal(order, want) {
		t.Fatalf("tickets in order %v, want %v", order, want)
	}
	again, err := env.Checkout.Confirm(ctx, o.ID, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, c) {
		t.Fatalf("a repeat's recorded result differs:\n got %+v\nwant %+v", again, c)
	}
}

// The PG's webhook that comes while the redirect's confirmation is under
// way (as in the load test, where the sandbox sends it right after the
// confirm's commit) waits for that confirmation and answers its result:
// the two cost the store the confirmation's round trips and statements
// alone (TestPaidOrder_RoundTrips), where the webhook confirmed again
// before (5 round trips, 16 statements, a second transaction).
func TestPaidOrder_WebhookDuringRedirect(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 4)
	trips := env.CountTrips(t, 0)
	// The first order warms the statement caches; the second is counted.
	for round, seat := range []string{env.Event.R[0], env.Event.R[1]} {
		o := env.Order(t, env.Account(t), seat)
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		before := trips.Snapshot()
		c, w, pgCalls := redirectWithWebhook(t, env, o, key, amount)
		got := trips.Snapshot().Sub(before)
		if w.Status != http.StatusOK || w.Result != c {
			t.Fatalf("round %d: webhook answered %d with %+v, want 200 with the redirect's result %+v", round, w.Status, w.Result, c)
		}
		checkouttest.WantOrder(t, c.Order, boxoffice.OrderConfirmed, "")
		if c.Outcome != boxoffice.PaymentConfirmed || len(c.Order.Tickets) != 1 {
			t.Fatalf("round %d: outcome %q, %d tickets", round, c.Outcome, len(c.Order.Tickets))
		}
		t.Logf("round %d: redirect and webhook: %d round trips, %d statements, %d connections acquired, %d calls to the PG", round, got.RoundTrips, got.Statements, got.Acquires, pgCalls)
		if round == 1 && (got.RoundTrips != 3 || got.Statements != 8) {
			t.Errorf("redirect and webhook: %d round trips and %d statements, want the confirmation's 3 and 8", got.RoundTrips, got.Statements)
		}
		if pgCalls != 2 {
			t.Errorf("round %d: redirect and webhook: %d calls to the PG, want the confirmation's 2 (confirm, look-up)", round, pgCalls)
		}
	}
	env.CheckInvariants(t)
}

// A webhook that waited for a redirect's confirmation which did not settle
// the payment (the redirect named another amount: the order failed, the
// payment was never confirmed) confirms on its own: the PG's payment is
// looked up again and recorded rejected.
func TestService_Confirm_WaitsOnlyForASettledResult(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 4)
	o := env.Order(t, env.Account(t), env.Event.R[0])
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	c, w, _ := redirectWithWebhook(t, env, o, key, amount+1)
	checkouttest.WantOrder(t, c.Order, boxoffice.OrderFailed, boxoffice.ReasonAmountMismatch)
	if c.Outcome != "" {
		t.Fatalf("redirect: outcome %q, want none", c.Outcome)
	}
	if w.Status != http.StatusOK || w.Result == nil || w.Result == c || w.Result.Outcome != boxoffice.PaymentRejected {
		t.Fatalf("webhook answered %d with %+v, want 200 with its own result, the payment rejected", w.Status, w.Result)
	}
	if outcome, _ := env.Outcome(t, key); outcome != boxoffice.PaymentRejected {
		t.Fatalf("payment recorded %q, want rejected", outcome)
	}
	env.CheckInvariants(t)
}

// redirectWithWebhook follows the success redirect of the payment with
// amount and, while the redirect's confirmation waits for the PG's look-up
// (after the PG's confirm), posts the PG's webhook for the payment; once
// the webhook's confirmation waits for the redirect's, the look-up goes on.
// It returns the redirect's result, the webhook's call and the calls to
// the PG (confirms and look-ups) of both.
func redirectWithWebhook(t *testing.T, env *checkouttest.Env, o *boxoffice.Order, key string, amount int64) (*boxoffice.Confirmation, checkouttest.WebhookCall, int64) {
	t.Helper()
	gw := env.Gateway()
	pgBefore := gw.Confirms.Load() + gw.LookUps.Load()
	pg := &pausedPG{PaymentGateway: gw, key: key, reached: make(chan struct{}), release: make(chan struct{})}
	defer func() { env.Checkout.PG = gw }()
	env.Checkout.PG = pg
	joined := make(chan struct{})
	checkout.SetJoining(env.Checkout, func(orderID, paymentKey string) {
		if orderID == o.ID && paymentKey == key {
			close(joined)
		}
	})
	var c *boxoffice.Confirmation
	var err error
	redirected := make(chan struct{})
	go func() {
		defer close(redirected)
		c, err = env.Redirect(o.ID, key, amount)
	}()
	<-pg.reached
	webhooked := make(chan struct{})
	go func() {
		defer close(webhooked)
		env.PostWebhook(t, &boxoffice.Payment{PaymentKey: key, OrderID: o.ID}, env.Clock.Now())
	}()
	select {
	case <-joined:
	case <-webhooked:
		t.Error("the webhook did not wait for the redirect's confirmation")
	}
	close(pg.release)
	<-redirected
	<-webhooked
	if err != nil {
		t.Fatalf("redirect: %v", err)
	}
	calls := env.WebhookCalls(key)
	if len(calls) != 1 {
		t.Fatalf("%d webhooks handled, want 1", len(calls))
	}
	return c, calls[0], gw.Confirms.Load() + gw.LookUps.Load() - pgBefore
}

// pausedPG is a PG whose first look-up of the payment key waits: it closes
// reached, then waits for release to close.
type pausedPG struct {
	boxoffice.PaymentGateway
	key              string
	reached, release chan struct{}
	paused           atomic.Bool
}

func (g *pausedPG) GetPayment(ctx context.Context, paymentKey string) (*boxoffice.Payment, error) {
	if paymentKey == g.key && g.paused.CompareAndSwap(false, true) {
		close(g.reached)
		<-g.release
	}
	return g.PaymentGateway.GetPayment(ctx, paymentKey)
}

// The paying path's statements with an array of order ids or seat labels
// keep their generic plan (docs/performance.md, "PostgreSQL's planning per paid
// order"): after paid orders one after the other, no connection planned
// the order's items read, checkout's look-ups under its lock, its insert
// (which returns the new order's items, so checkout reads none) or the
// confirmation's sale a sixth time as a custom plan, which PostgreSQL does when the generic plan is priced above the
// custom ones (an array parameter is priced for ten elements).
func TestPaidOrder_GenericPlans(t *testing.T) {
	t.Parallel()
	const orders = 12
	env := checkouttest.New(t, 2*orders) // half of the seats are R
	ctx := context.Background()
	for i := range orders {
		acct := env.Account(t)
		if _, err := env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: checkouttest.Limit, TTL: checkouttest.HoldTTL}, []string{env.Event.R[i]}); err != nil {
			t.Fatal(err)
		}
		o, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct)
		if err != nil {
			t.Fatal(err)
		}
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		env.MustRedirect(t, o.ID, key, amount)
		env.FindOrder(t, o.ID)
	}
	statements := map[string]string{
		"items with tickets":     `%SELECT i.order_id, i.seat_label%ticket%`,
		"order and items insert": `%INSERT INTO orders%INSERT INTO order_item%`,
		"checkout's look-ups":    `%ARRAY(SELECT seat_label FROM sold_seat%`,
		"sale":                   `%INSERT INTO sold_seat%INSERT INTO ticket%`,
	}
	generic := map[string]int64{}
	conns := env.DB.Pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		for name, like := range statements {
			rows, err := c.Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE $1`, like)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var stmt string
				var g, custom int64
				if err := rows.Scan(&stmt, &g, &custom); err != nil {
					t.Fatal(err)
				}
				if custom > 5 {
					t.Errorf("%s: %d custom plans on one connection (%d generic), want at most 5: %s", name, custom, g, stmt)
				}
				generic[name] += g
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name := range statements {
		if generic[name] == 0 {
			t.Errorf("%s: no generic plan on any connection after %d paid orders", name, orders)
		}
	}
}
