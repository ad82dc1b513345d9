package checkout_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
)

// The round trips to PostgreSQL of one paid order, step by step, as the
// app makes them (README, "Where the paying phase waits"): the checkout
// (CreateOrder), the success redirect's confirmation, the PG's webhook for
// the same payment, and the order page. The sandbox PG's own statements
// are not counted (a pool of their own). The wants are what each step
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
