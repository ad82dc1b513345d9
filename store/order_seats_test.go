package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
)

// wantInOrder checks that err refuses a release or a leave with code for
// the seats of the order orderID.
func wantInOrder(tb testing.TB, err error, code, orderID string) {
	tb.Helper()
	e := wantError(tb, err, code)
	if got := e.Details["order_id"]; got != orderID {
		tb.Errorf("%s names order %v, want %s", code, got, orderID)
	}
}

// wantHolds checks the account's holds of the env's event.
func wantHolds(tb testing.TB, env *checkouttest.Env, acct int64, want []string) {
	tb.Helper()
	if held, _ := env.MyHolds(tb, acct); !slices.Equal(held, want) {
		tb.Errorf("the fan holds %v, want %v", held, want)
	}
}

// A seat of the account's order awaiting payment cannot be released, nor
// can the fan leave the sale, until the order is paid or ends: expired,
// replaced by a checkout that then lost a hold, failed, refunded, or lost
// with Redis's data. A seat held outside the order is released as before.
func TestHolds_Release_SeatInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setUp := func(t *testing.T) (*checkouttest.Env, int64, boxoffice.Shopper, *boxoffice.Order) {
		env := checkouttest.New(t, 10)
		acct := env.Account(t)
		o := env.Order(t, acct, env.Event.R[0], env.Event.R[1])
		return env, acct, boxoffice.Shopper{EventID: env.Event.ID, AccountID: acct}, o
	}
	hold := func(t *testing.T, env *checkouttest.Env, acct int64, seats ...string) {
		t.Helper()
		req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
		if _, err := env.Holds.Hold(ctx, req, seats); err != nil {
			t.Fatalf("hold %v: %v", seats, err)
		}
	}
	release := func(t *testing.T, env *checkouttest.Env, sh boxoffice.Shopper, seat string) {
		t.Helper()
		if _, err := env.Holds.Release(ctx, sh, seat); err != nil {
			t.Errorf("release %s: %v, want it released", seat, err)
		}
	}

	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		env, acct, sh, o := setUp(t)
		mine, err := env.Holds.Release(ctx, sh, env.Event.R[0])
		wantInOrder(t, err, boxoffice.ESEATINORDER, o.ID)
		if !slices.Equal(mine.Mine, env.Event.R[:2]) {
			t.Errorf("the refusal's state says the fan holds %v, want %v", mine.Mine, env.Event.R[:2])
		}
		wantInOrder(t, env.Holds.Leave(ctx, sh), boxoffice.EORDERPENDING, o.ID)
		wantHolds(t, env, acct, env.Event.R[:2])
		if o := env.FindOrder(t, o.ID); o.Status != boxoffice.OrderPendingPayment {
			t.Errorf("order %s is %s after the refusals, want PENDING_PAYMENT", o.ID, o.Status)
		}
	})

	t.Run("SeatOutsideTheOrder", func(t *testing.T) {
		t.Parallel()
		env, acct, sh, o := setUp(t)
		hold(t, env, acct, env.Event.R[2])
		release(t, env, sh, env.Event.R[2])
		wantHolds(t, env, acct, env.Event.R[:2])
		wantInOrder(t, env.Holds.Leave(ctx, sh), boxoffice.EORDERPENDING, o.ID)
	})

	t.Run("AfterExpiry", func(t *testing.T) {
		t.Parallel()
		env, acct, sh, _ := setUp(t)
		env.Expire(t)
		wantHolds(t, env, acct, nil)
		hold(t, env, acct, env.Event.R[0])
		release(t, env, sh, env.Event.R[0])
		if err := env.Holds.Leave(ctx, sh); err != nil {
			t.Errorf("leave after the order expired: %v", err)
		}
	})

	t.Run("AfterSale", func(t *testing.T) {
		t.Parallel()
		env, acct, sh, o := setUp(t)
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		checkouttest.WantOrder(t, env.MustRedirect(t, o.ID, key, amount).Order, boxoffice.OrderConfirmed, "")
		hold(t, env, acct, env.Event.R[2])
		release(t, env, sh, env.Event.R[2])
		if err := env.Holds.Leave(ctx, sh); err != nil {
			t.Errorf("leave after the order was paid: %v", err)
		}
		env.CheckInvariants(t)
	})

	t.Run("Replaced", func(t *testing.T) {
		t.Parallel()
		env, acct, sh, old := setUp(t)
		hold(t, env, acct, env.Event.R[2])
		o, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct)
		if err != nil {
			t.Fatal(err)
		}
		for _, seat := range env.Event.R[:3] {
			_, err := env.Holds.Release(ctx, sh, seat)
			wantInOrder(t, err, boxoffice.ESEATINORDER, o.ID)
		}
		wantInOrder(t, env.Holds.Leave(ctx, sh), boxoffice.EORDERPENDING, o.ID)
		checkouttest.WantOrder(t, env.FindOrder(t, old.ID), boxoffice.OrderCancelled, boxoffice.ReasonReplaced)
	})

	// The checkout that replaces the order finds a hold ended and cancels
	// its own order (hold_lost): no order of the fan is payable, so the
	// seats still held are the fan's to release.
	t.Run("ReplacedThenHoldLost", func(t *testing.T) {
		t.Parallel()
		env, acct, sh, _ := setUp(t)
		err := env.Holds.ExtendHolds(ctx, env.Event.ID, acct, "newer", []string{env.Event.R[0], env.Event.R[1], env.Event.R[2]}, holdTTL)
		if e := wantError(t, err, boxoffice.ESEATTAKEN); !slices.Equal(e.Details["seats"].([]string), env.Event.R[2:3]) {
			t.Errorf("the extension lost %v, want %v", e.Details["seats"], env.Event.R[2:3])
		}
		release(t, env, sh, env.Event.R[0])
		if err := env.Holds.Leave(ctx, sh); err != nil {
			t.Errorf("leave with no payable order: %v", err)
		}
		wantHolds(t, env, acct, nil)
	})

	t.Run("Failed", func(t *testing.T) {
		t.Parallel()
		env, _, sh, o := setUp(t)
		if _, err := env.Orders.FailTampered(ctx, o.ID, "test"); err != nil {
			t.Fatal(err)
		}
		release(t, env, sh, env.Event.R[0])
		release(t, env, sh, env.Event.R[1])
	})

	// A payment that sells nothing (Redis lost the hold of a seat, which a
	// rival holds now) refunds the order: the seat the fan still holds is
	// its to release again.
	t.Run("Refunded", func(t *testing.T) {
		t.Parallel()
		env, acct, sh, o := setUp(t)
		if err := store.EndHold(ctx, env.Holds, env.Event.ID, acct, env.Event.R[0]); err != nil {
			t.Fatal(err)
		}
		hold(t, env, env.Account(t), env.Event.R[0])
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		checkouttest.WantOrder(t, env.MustRedirect(t, o.ID, key, amount).Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
		release(t, env, sh, env.Event.R[1])
		env.CheckInvariants(t)
	})

	t.Run("RedisLost", func(t *testing.T) {
		t.Parallel()
		env, acct, sh, _ := setUp(t)
		forgetRedis(t, env.R)
		_, err := env.Holds.Release(ctx, sh, env.Event.R[0])
		wantError(t, err, boxoffice.ENOTFOUND)
		hold(t, env, acct, env.Event.R[0])
		release(t, env, sh, env.Event.R[0])
	})
}
