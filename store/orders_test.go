package store_test

import (
	"context"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment"
	"github.com/boxoffice/boxoffice/store/storetest"
)

var orderIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{6,64}$`)

func TestOrders_CreateOrder(t *testing.T) {
	t.Parallel()
	env := newCheckoutEnv(t, 40)
	ctx := context.Background()
	ev := env.Event

	t.Run("OK", func(t *testing.T) {
		acct := env.account(t)
		before := env.Clock.now()
		o := env.order(t, acct, ev.S[0], ev.R[0])
		if !orderIDPattern.MatchString(o.ID) || len(o.ID) != 22 {
			t.Errorf("order id %q, want 22 characters of [A-Za-z0-9_-]", o.ID)
		}
		wantOrder(t, o, boxoffice.OrderPendingPayment, "")
		if o.Amount != 250000 || o.Currency != "KRW" || o.AccountID != acct || o.EventID != ev.ID {
			t.Errorf("order %+v, want 250000 KRW of account %d for event %d", o, acct, ev.ID)
		}
		want := []boxoffice.OrderItem{{Seat: ev.R[0], Grade: "R", Price: 150000}, {Seat: ev.S[0], Grade: "S", Price: 100000}}
		if !slices.Equal(o.Items, want) {
			t.Errorf("items %v, want %v (priced from the grades, by section)", o.Items, want)
		}
		if o.Name != "Test Night × 2" {
			t.Errorf("name %q, want %q", o.Name, "Test Night × 2")
		}
		if got := o.ExpiresAt.Sub(before); got < boxoffice.DefaultPaymentWindow || got > boxoffice.DefaultPaymentWindow+5*time.Second {
			t.Errorf("expires %v after checkout, want the payment window, %v", got, boxoffice.DefaultPaymentWindow)
		}
		labels, ttl, err := env.Holds.MyHolds(ctx, ev.ID, acct)
		if err != nil || len(labels) != 2 || ttl < boxoffice.DefaultPaymentWindow-5*time.Second {
			t.Errorf("holds after checkout %v, TTL %v (%v); want both extended to the payment window", labels, ttl, err)
		}
	})

	t.Run("ErrNoHolds", func(t *testing.T) {
		_, err := env.Orders.CreateOrder(ctx, ev.ID, env.account(t))
		wantError(t, err, boxoffice.ENOHOLDS)
	})

	t.Run("SameHoldsSameOrder", func(t *testing.T) {
		acct := env.account(t)
		first := env.order(t, acct, ev.R[1])
		again, err := env.Orders.CreateOrder(ctx, ev.ID, acct)
		if err != nil || again.ID != first.ID {
			t.Fatalf("second checkout of the same holds = %v, %v; want order %s again", again, err, first.ID)
		}
		env.order(t, acct, ev.R[2]) // more seats: a new order of both
		if n := env.count(t, `SELECT count(*) FROM orders WHERE account_id = $1`, acct); n != 2 {
			t.Errorf("%d orders, want 2", n)
		}
	})

	// A double click, many times over: one order per set of holds.
	t.Run("ConcurrentCheckouts", func(t *testing.T) {
		for round := range 5 {
			acct := env.account(t)
			req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
			if _, err := env.Holds.Hold(ctx, req, []string{ev.S[3+round]}); err != nil {
				t.Fatal(err)
			}
			ids := make([]string, 50)
			storetest.AtOnce(len(ids), func(i int) {
				o, err := env.Orders.CreateOrder(ctx, ev.ID, acct)
				if err != nil {
					t.Errorf("CreateOrder: %v", err)
					return
				}
				ids[i] = o.ID
			})
			if distinct := slices.Compact(slices.Sorted(slices.Values(ids))); len(distinct) != 1 || distinct[0] == "" {
				t.Fatalf("round %d: concurrent checkouts made orders %v, want one", round, distinct)
			}
		}
	})

	t.Run("ErrSaleEnded", func(t *testing.T) {
		acct := env.account(t)
		req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
		if _, err := env.Holds.Hold(ctx, req, []string{ev.S[10]}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.DB.Pool.Exec(ctx, `UPDATE event SET status = 'closed' WHERE id = $1`, ev.ID); err != nil {
			t.Fatal(err)
		}
		defer env.DB.Pool.Exec(ctx, `UPDATE event SET status = 'on_sale' WHERE id = $1`, ev.ID)
		_, err := env.Orders.CreateOrder(ctx, ev.ID, acct)
		wantError(t, err, boxoffice.ECONFLICT)
	})
}

func TestOrders_FindOrders(t *testing.T) {
	t.Parallel()
	env := newCheckoutEnv(t, 20)
	acct := env.account(t)
	first := env.order(t, acct, env.Event.R[0])
	env.Clock.advance(time.Second)
	second := env.order(t, acct, env.Event.R[0], env.Event.R[1])
	env.order(t, env.account(t), env.Event.S[0])
	orders, err := env.Orders.FindOrders(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	if len(orders) != 2 || orders[0].ID != second.ID || orders[1].ID != first.ID || len(orders[0].Items) != 2 {
		t.Fatalf("FindOrders = %v, want %s (2 items) then %s", orders, second.ID, first.ID)
	}
	_, err = env.Orders.FindOrderByID(context.Background(), "no-such-order")
	wantError(t, err, boxoffice.ENOTFOUND)
}

func TestOrders_ExpireOrders(t *testing.T) {
	t.Parallel()
	env := newCheckoutEnv(t, 40)
	ctx := context.Background()
	ev := env.Event

	a, b := env.account(t), env.account(t)
	due := env.order(t, a, ev.R[0], ev.R[1])
	env.Clock.advance(time.Minute)
	later := env.order(t, b, ev.R[2])
	env.Clock.advance(boxoffice.DefaultPaymentWindow - 30*time.Second) // due has expired, later has not

	// Concurrent workers (several instances) expire each order once.
	var expired atomic.Int64
	storetest.AtOnce(8, func(int) {
		n, err := env.Orders.ExpireOrders(ctx)
		if err != nil {
			t.Errorf("ExpireOrders: %v", err)
		}
		expired.Add(int64(n))
	})
	if expired.Load() != 1 {
		t.Errorf("%d orders expired, want 1", expired.Load())
	}
	wantOrder(t, env.findOrder(t, due.ID), boxoffice.OrderExpired, "")
	wantOrder(t, env.findOrder(t, later.ID), boxoffice.OrderPendingPayment, "")
	if labels, _ := env.myHolds(t, a); len(labels) != 0 {
		t.Errorf("holds of the expired order's account %v, want released", labels)
	}
	if labels, _ := env.myHolds(t, b); !slices.Equal(labels, []string{ev.R[2]}) {
		t.Errorf("holds of the payable order's account %v, want %v", labels, []string{ev.R[2]})
	}

	// A seat of another payable order of the account keeps its hold.
	c := env.account(t)
	old := env.order(t, c, ev.S[0])
	env.Clock.advance(time.Minute)
	env.order(t, c, ev.S[0], ev.S[1])
	env.Clock.advance(boxoffice.DefaultPaymentWindow - 30*time.Second)
	if _, err := env.Orders.ExpireOrders(ctx); err != nil {
		t.Fatal(err)
	}
	wantOrder(t, env.findOrder(t, old.ID), boxoffice.OrderExpired, "")
	if labels, _ := env.myHolds(t, c); !slices.Equal(labels, []string{ev.S[0], ev.S[1]}) {
		t.Errorf("holds %v, want %v kept for the payable order", labels, []string{ev.S[0], ev.S[1]})
	}
}

// The expiry and a payment racing at the expiry instant: the order always
// ends CONFIRMED (a late payment of free seats is confirmed), never EXPIRED
// after its confirmation.
func TestOrders_ExpireOrders_RaceWithConfirm(t *testing.T) {
	t.Parallel()
	env := newCheckoutEnv(t, 60)
	ctx := context.Background()
	for round := range 20 {
		o := env.order(t, env.account(t), env.Event.Labels[round])
		key, amount := env.pay(t, o, payment.ScenarioWebhookNever)
		env.Clock.advance(o.ExpiresAt.Sub(env.Clock.now()))
		storetest.AtOnce(2, func(i int) {
			if i == 0 {
				if _, err := env.Orders.ExpireOrders(ctx); err != nil {
					t.Errorf("ExpireOrders: %v", err)
				}
				return
			}
			if _, err := env.redirect(o.ID, key, amount); err != nil {
				t.Errorf("redirect: %v", err)
			}
		})
		wantOrder(t, env.findOrder(t, o.ID), boxoffice.OrderConfirmed, "")
	}
	env.checkInvariants(t)
}

func TestOrders_FindStuckOrders(t *testing.T) {
	t.Parallel()
	env := newCheckoutEnv(t, 20)
	ctx := context.Background()
	ev := env.Event

	// Paid late for a seat sold meanwhile, while the PG cannot refund.
	late := env.order(t, env.account(t), ev.R[0])
	key, amount := env.pay(t, late, payment.ScenarioWebhookNever)
	env.expire(t)
	other := env.order(t, env.account(t), ev.R[0])
	k2, a2 := env.pay(t, other, payment.ScenarioWebhookNever)
	env.mustRedirect(t, other.ID, k2, a2)
	env.gateway().cancelDown.Store(true)
	c := env.mustRedirect(t, late.ID, key, amount)
	if c.Outcome != boxoffice.PaymentRefundPending {
		t.Fatalf("outcome %q with the PG down, want refund_pending", c.Outcome)
	}
	// Pending past its expiry: the expiry worker has not run.
	overdue := env.order(t, env.account(t), ev.S[0])
	env.Clock.advance(boxoffice.DefaultPaymentWindow + time.Second)

	stuck, err := env.Orders.FindStuckOrders(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range stuck {
		got[s.Order.ID] = s.Why
	}
	want := map[string]string{late.ID: "refund_pending", overdue.ID: "expiry_overdue"}
	if len(got) != len(want) || got[late.ID] != want[late.ID] || got[overdue.ID] != want[overdue.ID] {
		t.Fatalf("stuck orders %v, want %v", got, want)
	}

	// The PG answers again: the reconciler refunds, and nothing is stuck.
	env.gateway().cancelDown.Store(false)
	if _, err := env.Orders.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Orders.ExpireOrders(ctx); err != nil {
		t.Fatal(err)
	}
	if out, _ := env.outcome(t, key); out != boxoffice.PaymentRefunded || env.pgStatus(t, key) != payment.StatusCanceled {
		t.Errorf("after reconciling: outcome %q, PG %s; want refunded, CANCELED", out, env.pgStatus(t, key))
	}
	if stuck, err := env.Orders.FindStuckOrders(ctx, 10); err != nil || len(stuck) != 0 {
		t.Errorf("stuck orders after reconciling %v (%v), want none", stuck, err)
	}
	env.checkInvariants(t)
}

func (env *checkoutEnv) myHolds(tb testing.TB, acct int64) ([]string, time.Duration) {
	tb.Helper()
	labels, ttl, err := env.Holds.MyHolds(context.Background(), env.Event.ID, acct)
	if err != nil {
		tb.Fatal(err)
	}
	return labels, ttl
}
