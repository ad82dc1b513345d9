package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// The expiry reads an expired order's seats in PostgreSQL, then releases
// their holds in Redis. If the same fan holds the same seats again (or checks
// out again) in between, the newer holds are not the expired order's to end.
func TestOrders_ExpireOrders_FencedByOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	for _, tt := range []struct {
		name string
		// again is what the fan does between the expiry's read and release.
		again func(t *testing.T, env *checkouttest.Env, acct int64, seats []string)
	}{
		{"CheckedOutAgain", func(t *testing.T, env *checkouttest.Env, acct int64, seats []string) {
			if _, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct); err != nil {
				t.Errorf("check out again: %v", err)
			}
		}},
		{"HeldAgain", func(t *testing.T, env *checkouttest.Env, acct int64, seats []string) {
			for _, l := range seats {
				if err := store.EndHold(ctx, env.Holds, env.Event.ID, acct, l); err != nil {
					t.Errorf("end the hold of %s: %v", l, err)
				}
			}
			req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
			if _, err := env.Holds.Hold(ctx, req, seats); err != nil {
				t.Errorf("hold %v again: %v", seats, err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := checkouttest.New(t, 10)
			acct := env.Account(t)
			seats := []string{env.Event.R[0], env.Event.R[1]}
			old := env.Order(t, acct, seats...)
			env.Clock.Advance(boxoffice.DefaultPaymentWindow + time.Second)
			store.SetBeforeRelease(env.Orders, func(id string) {
				if id == old.ID {
					tt.again(t, env, acct, seats)
				}
			})
			if _, err := env.Orders.ExpireOrders(ctx); err != nil {
				t.Fatalf("ExpireOrders: %v", err)
			}
			if held, _ := env.MyHolds(t, acct); !slices.Equal(held, seats) {
				t.Errorf("the fan holds %v after the expiry of order %s, want its newer holds %v kept", held, old.ID, seats)
			}
		})
	}
}

// Many fans, whose orders expired, each hold their seats again and check out
// again while several instances expire the old orders, round after round:
// every new order keeps its holds.
func TestOrders_ExpireOrders_FencedByOrder_Race(t *testing.T) {
	t.Parallel()
	const fans, seats, instances, rounds = 150, 2, 3, 4
	env := checkouttest.New(t, fans*seats)
	ctx := context.Background()
	ev := env.Event
	accts := make([]int64, fans)
	for i := range accts {
		accts[i] = env.Account(t)
	}
	expirers := make([]*store.Orders, instances)
	for i := range expirers {
		expirers[i] = env.NewOrders()
	}
	seatsOf := func(fan int) []string { return slices.Sorted(slices.Values(ev.Labels[fan*seats : (fan+1)*seats])) }
	for fan := range fans {
		env.Order(t, accts[fan], seatsOf(fan)...)
	}
	for round := range rounds {
		env.Clock.Advance(boxoffice.DefaultPaymentWindow + time.Second)
		newOrders := make([]string, fans)
		storetest.AtOnce(instances+fans, func(i int) {
			if i < instances {
				if _, err := expirers[i].ExpireOrders(ctx); err != nil {
					t.Errorf("instance %d: ExpireOrders: %v", i, err)
				}
				return
			}
			fan := i - instances
			for _, l := range seatsOf(fan) {
				if err := store.EndHold(ctx, env.Holds, ev.ID, accts[fan], l); err != nil {
					t.Errorf("round %d: fan %d's hold of %s ends: %v", round, fan, l, err)
				}
			}
			req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: accts[fan], Limit: limit, TTL: holdTTL}
			if _, err := env.Holds.Hold(ctx, req, seatsOf(fan)); err != nil {
				t.Errorf("round %d: fan %d holds %v again: %v", round, fan, seatsOf(fan), err)
				return
			}
			o, err := env.Orders.CreateOrder(ctx, ev.ID, accts[fan])
			if err != nil {
				t.Errorf("round %d: fan %d checks out again: %v", round, fan, err)
				return
			}
			newOrders[fan] = o.ID
		})
		for fan := range fans {
			if held, _ := env.MyHolds(t, accts[fan]); !slices.Equal(held, seatsOf(fan)) {
				t.Fatalf("round %d: fan %d holds %v with its new order %s payable, want %v: an old order's expiry ended its newer holds",
					round, fan, held, newOrders[fan], seatsOf(fan))
			}
			if o := env.FindOrder(t, newOrders[fan]); o.Status != boxoffice.OrderPendingPayment {
				t.Errorf("round %d: fan %d's new order %s is %s, want PENDING_PAYMENT", round, fan, o.ID, o.Status)
			}
		}
	}
}
