package store_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
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

// wantInOrderSeats checks which of the fan's holds the state says are in
// an order awaiting payment (SeatMapState.InOrder), as the hold panel shows
// them, and that SeatStatuses reads the same.
func wantInOrderSeats(tb testing.TB, env *checkouttest.Env, sh boxoffice.Shopper, st boxoffice.SeatMapState, want map[string]string) {
	tb.Helper()
	if !maps.Equal(st.InOrder, want) {
		tb.Errorf("the reply says the holds %v are in an order, want %v", st.InOrder, want)
	}
	read, err := env.Holds.SeatStatuses(context.Background(), sh)
	if err != nil {
		tb.Fatal(err)
	}
	if !maps.Equal(read.InOrder, want) {
		tb.Errorf("SeatStatuses says the holds %v are in an order, want %v", read.InOrder, want)
	}
}

// inOrder is an InOrder of seats all in the order id.
func inOrder(id string, seats ...string) map[string]string {
	m := map[string]string{}
	for _, l := range seats {
		m[l] = id
	}
	return m
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
		wantInOrderSeats(t, env, sh, mine, inOrder(o.ID, env.Event.R[:2]...))
		wantInOrder(t, env.Holds.Leave(ctx, sh), boxoffice.EORDERPENDING, o.ID)
		wantHolds(t, env, acct, env.Event.R[:2])
		if o := env.FindOrder(t, o.ID); o.Status != boxoffice.OrderPendingPayment {
			t.Errorf("order %s is %s after the refusals, want PENDING_PAYMENT", o.ID, o.Status)
		}
	})

	t.Run("SeatOutsideTheOrder", func(t *testing.T) {
		t.Parallel()
		env, acct, sh, o := setUp(t)
		req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
		res, err := env.Holds.Hold(ctx, req, env.Event.R[2:3])
		if err != nil {
			t.Fatal(err)
		}
		wantInOrderSeats(t, env, sh, res.Mine, inOrder(o.ID, env.Event.R[:2]...))
		best, err := env.Holds.HoldBest(ctx, req, "S", 1)
		if err != nil {
			t.Fatal(err)
		}
		wantInOrderSeats(t, env, sh, best.Mine, inOrder(o.ID, env.Event.R[:2]...))
		release(t, env, sh, best.Held[0])
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
			mine, err := env.Holds.Release(ctx, sh, seat)
			wantInOrder(t, err, boxoffice.ESEATINORDER, o.ID)
			wantInOrderSeats(t, env, sh, mine, inOrder(o.ID, env.Event.R[:3]...))
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
		wantInOrderSeats(t, env, sh, boxoffice.SeatMapState{}, nil)
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

// Many fans with orders awaiting payment try, over and over, to release
// their orders' seats and to leave the sale while their orders are being
// paid, expired (two other instances' ExpireOrders, hold_release_order.lua)
// or replaced by a new checkout, and rivals try to hold those seats all the
// while, round after round. A seat of a payable order is never released by
// its own fan (no release of an order's seat succeeds: before the order ends
// it is refused, after it the seat is sold or its hold ended; a leave
// succeeds only once the order is paid or its window ran out), no rival
// ever holds a seat of an order being paid or replaced (the seat stays its
// fan's: a lock names one account), every payment sells, and once an order
// ended by its expiry the fan holds and releases the same seats as before.
// The claim outlasts the payment window here (SoldCacheTTL), so that each
// confirmation moves the order's holds with it.
func TestOrders_OrderSeats_Race(t *testing.T) {
	t.Parallel()
	const perGroup, rivals, rounds, tries = 40, 60, 3, 10
	const fans = 3 * perGroup // paid, then expired, then replaced
	env := checkouttest.New(t, fans*3*rounds)
	env.Holds.SoldCacheTTL = 15 * time.Minute
	ctx := context.Background()
	ev := env.Event
	expirers := []*store.Orders{env.NewOrders(), env.NewOrders()}
	rivalAccts := make([]int64, rivals)
	for i := range rivalAccts {
		rivalAccts[i] = env.Account(t)
	}

	for round := range rounds {
		seats := ev.Labels[round*fans*3 : (round+1)*fans*3]
		seatsOf := func(fan int) []string { return seats[fan*3 : fan*3+2] } // its order's
		extra := func(fan int) string { return seats[fan*3+2] }             // held for the replacing order
		group := func(fan int) string { return [...]string{"paid", "expired", "replaced"}[fan/perGroup] }
		accts, orders, newer := make([]int64, fans), make([]*boxoffice.Order, fans), make([]string, fans)
		var ordered []string // the orders' seats, and whose they are
		fanOf := map[string]int{}
		var due []string
		for fan := range fans {
			accts[fan] = env.Account(t)
			orders[fan] = env.Order(t, accts[fan], seatsOf(fan)...)
			for _, l := range seatsOf(fan) {
				ordered, fanOf[l] = append(ordered, l), fan
			}
			if group(fan) == "expired" {
				due = append(due, orders[fan].ID)
			}
		}
		if _, err := env.DB.Pool.Exec(ctx, `UPDATE orders SET expires_at = $2 WHERE id = ANY($1)`, due, env.Clock.Now()); err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		var violations []string
		violate := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			violations = append(violations, fmt.Sprintf("round %d: ", round)+fmt.Sprintf(format, args...))
		}
		payers, replacers := perGroup, perGroup
		storetest.AtOnce(payers+len(expirers)+replacers+fans+rivals, func(i int) {
			switch {
			case i < payers: // the paid group's fans pay
				o := orders[i]
				key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
				if _, err := env.Redirect(o.ID, key, amount); err != nil {
					t.Errorf("round %d: pay order %s: %v", round, o.ID, err)
				}
			case i < payers+len(expirers):
				if _, err := expirers[i-payers].ExpireOrders(ctx); err != nil {
					t.Errorf("round %d: ExpireOrders: %v", round, err)
				}
			case i < payers+len(expirers)+replacers: // the replaced group's fans check out again
				fan := 2*perGroup + i - payers - len(expirers)
				req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: accts[fan], Limit: limit, TTL: holdTTL}
				if _, err := env.Holds.Hold(ctx, req, []string{extra(fan)}); err != nil {
					t.Errorf("round %d: fan %d holds %s: %v", round, fan, extra(fan), err)
					return
				}
				o, err := env.Orders.CreateOrder(ctx, ev.ID, accts[fan])
				if err != nil {
					t.Errorf("round %d: fan %d checks out again: %v", round, fan, err)
					return
				}
				newer[fan] = o.ID
			case i < payers+len(expirers)+replacers+fans: // every fan tries to let go
				fan := i - payers - len(expirers) - replacers
				sh := boxoffice.Shopper{EventID: ev.ID, AccountID: accts[fan]}
				for range tries {
					for _, l := range seatsOf(fan) {
						_, err := env.Holds.Release(ctx, sh, l)
						switch boxoffice.ErrorCode(err) {
						case "":
							violate("fan %d (%s) released %s of its order %s", fan, group(fan), l, orders[fan].ID)
						case boxoffice.ESEATINORDER, boxoffice.ENOTFOUND:
						default:
							t.Errorf("round %d: fan %d releases %s: %v", round, fan, l, err)
						}
					}
					err := env.Holds.Leave(ctx, sh)
					switch boxoffice.ErrorCode(err) {
					case "":
						if o := env.FindOrder(t, orders[fan].ID); group(fan) == "replaced" || o.Payable(env.Clock.Now()) {
							violate("fan %d (%s) left the sale with its order %s %s", fan, group(fan), o.ID, o.Status)
						}
					case boxoffice.EORDERPENDING:
					default:
						t.Errorf("round %d: fan %d leaves: %v", round, fan, err)
					}
				}
			default: // rivals try to take the orders' seats
				r := i - payers - len(expirers) - replacers - fans
				req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: rivalAccts[r], Limit: limit, TTL: holdTTL}
				for k := range tries * 4 {
					l := ordered[(r*7+k*13)%len(ordered)]
					_, err := env.Holds.Hold(ctx, req, []string{l})
					switch boxoffice.ErrorCode(err) {
					case "":
						if g := group(fanOf[l]); g != "expired" {
							violate("rival %d held %s of fan %d's order (%s)", r, l, fanOf[l], g)
						}
						if _, err := env.Holds.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: rivalAccts[r]}, l); err != nil {
							t.Errorf("round %d: rival %d releases %s: %v", round, r, l, err)
						}
					case boxoffice.ESEATTAKEN:
					default:
						t.Errorf("round %d: rival %d holds %s: %v", round, r, l, err)
					}
				}
			}
		})
		for _, v := range violations {
			t.Error(v)
		}

		for fan := range fans {
			sh := boxoffice.Shopper{EventID: ev.ID, AccountID: accts[fan]}
			switch o := env.FindOrder(t, orders[fan].ID); group(fan) {
			case "paid":
				checkouttest.WantOrder(t, o, boxoffice.OrderConfirmed, "")
			case "expired":
				checkouttest.WantOrder(t, o, boxoffice.OrderExpired, "")
				req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: accts[fan], Limit: limit, TTL: holdTTL}
				if _, err := env.Holds.Hold(ctx, req, seatsOf(fan)); err != nil {
					t.Errorf("round %d: fan %d holds %v again after its order expired: %v", round, fan, seatsOf(fan), err)
					continue
				}
				for _, l := range seatsOf(fan) {
					if _, err := env.Holds.Release(ctx, sh, l); err != nil {
						t.Errorf("round %d: fan %d releases %s after its order expired: %v", round, fan, l, err)
					}
				}
			case "replaced":
				checkouttest.WantOrder(t, o, boxoffice.OrderCancelled, boxoffice.ReasonReplaced)
				if newer[fan] == "" {
					continue
				}
				checkouttest.WantOrder(t, env.FindOrder(t, newer[fan]), boxoffice.OrderPendingPayment, "")
				want := slices.Sorted(slices.Values(append(slices.Clone(seatsOf(fan)), extra(fan))))
				wantHolds(t, env, accts[fan], want)
				_, err := env.Holds.Release(ctx, sh, seatsOf(fan)[0])
				wantInOrder(t, err, boxoffice.ESEATINORDER, newer[fan])
			}
		}
	}
	env.CheckInvariants(t)
}
