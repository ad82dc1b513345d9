package checkout_test

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
)

// The round trips to PostgreSQL of one paid order, step by step, as the
// app makes them (README, "Where the paying phase waits"): the checkout
// (CreateOrder), the success redirect's confirmation, the PG's webhook for
// the same payment, and the order page. The sandbox PG's own statements
// are not counted here (a pool of their own): payment/sandbox's
// TestSandbox_CommitsPerPayment counts its commits and statements per
// payment. The wants are what each step
// costs now, in round trips and in statements (README, "PostgreSQL's work
// per paid order"): a change that adds one fails here.
func TestPaidOrder_RoundTrips(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 4)
	trips := env.CountTrips(t, 0)
	ctx := context.Background()
	steps := []struct {
		name             string
		want, statements int64
	}{{"checkout", 2, 12}, {"confirmation", 3, 17}, {"webhook", 1, 4}, {"order page", 1, 3}}
	// The first order warms the statement caches and the sold-seat copy;
	// the second is counted.
	for round, seat := range []string{env.Event.R[0], env.Event.R[1]} {
		acct := env.Account(t)
		if _, err := env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: checkouttest.Limit, TTL: checkouttest.HoldTTL}, []string{seat}); err != nil {
			t.Fatal(err)
		}
		got := make([]checkouttest.TripsSnapshot, len(steps))
		before := trips.Snapshot()
		o, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct)
		if err != nil {
			t.Fatal(err)
		}
		got[0] = trips.Snapshot().Sub(before)
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		before = trips.Snapshot()
		c := env.MustRedirect(t, o.ID, key, amount)
		got[1] = trips.Snapshot().Sub(before)
		before = trips.Snapshot()
		if status := env.PostWebhook(t, &boxoffice.Payment{PaymentKey: key, OrderID: o.ID}, env.Clock.Now()); status != http.StatusOK {
			t.Fatalf("webhook: status %d", status)
		}
		got[2] = trips.Snapshot().Sub(before)
		before = trips.Snapshot()
		page := env.FindOrder(t, o.ID)
		got[3] = trips.Snapshot().Sub(before)
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
			t.Logf("%s: %d round trips, %d statements, %d connections acquired, held %v", s.name, got[i].RoundTrips, got[i].Statements, got[i].Acquires, got[i].Held)
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
