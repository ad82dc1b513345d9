package store_test

import (
	"context"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
)

var orderIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{6,64}$`)

func TestOrders_CreateOrder(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 40)
	ctx := context.Background()
	ev := env.Event

	t.Run("OK", func(t *testing.T) {
		acct := env.Account(t)
		before := env.Clock.Now()
		o := env.Order(t, acct, ev.S[0], ev.R[0])
		if !orderIDPattern.MatchString(o.ID) || len(o.ID) != 22 {
			t.Errorf("order id %q, want 22 characters of [A-Za-z0-9_-]", o.ID)
		}
		checkouttest.WantOrder(t, o, boxoffice.OrderPendingPayment, "")
		if o.Amount != (boxoffice.Money{Amount: 250000, Currency: "KRW"}) || o.AccountID != acct || o.EventID != ev.ID {
			t.Errorf("order %+v, want 250000 KRW of account %d for event %d", o, acct, ev.ID)
		}
		want := []boxoffice.OrderItem{{Seat: ev.R[0], Grade: "R", Price: 150000}, {Seat: ev.S[0], Grade: "S", Price: 100000}}
		priced := func(a, b boxoffice.OrderItem) bool {
			return a.Seat == b.Seat && a.Grade == b.Grade && a.Price == b.Price
		}
		if !slices.EqualFunc(o.Items, want, priced) {
			t.Errorf("items %v, want %v (priced from the grades, by section)", o.Items, want)
		}
		if o.Name != "Test Night × 2" {
			t.Errorf("name %q, want %q", o.Name, "Test Night × 2")
		}
		// The new order is made from what checkout wrote, not read again:
		// it is the order as it reads from then on.
		if read, err := env.Orders.FindOrderByID(ctx, o.ID); err != nil || !reflect.DeepEqual(o, read) {
			t.Errorf("checkout returned\n%+v\nthe order reads (%v)\n%+v", o, err, read)
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
		_, err := env.Orders.CreateOrder(ctx, ev.ID, env.Account(t))
		wantError(t, err, boxoffice.ENOHOLDS)
	})

	t.Run("SameHoldsSameOrder", func(t *testing.T) {
		acct := env.Account(t)
		first := env.Order(t, acct, ev.R[1])
		again, err := env.Orders.CreateOrder(ctx, ev.ID, acct)
		if err != nil || again.ID != first.ID {
			t.Fatalf("second checkout of the same holds = %v, %v; want order %s again", again, err, first.ID)
		}
		env.Order(t, acct, ev.R[2]) // more seats: a new order of both
		if n := env.Count(t, `SELECT count(*) FROM orders WHERE account_id = $1`, acct); n != 2 {
			t.Errorf("%d orders, want 2", n)
		}
	})

	// A double click, many times over: one order per set of holds.
	t.Run("ConcurrentCheckouts", func(t *testing.T) {
		for round := range 5 {
			acct := env.Account(t)
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
		acct := env.Account(t)
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
	env := checkouttest.New(t, 20)
	acct := env.Account(t)
	first := env.Order(t, acct, env.Event.R[0])
	env.Clock.Advance(time.Second)
	second := env.Order(t, acct, env.Event.R[0], env.Event.R[1])
	env.Order(t, env.Account(t), env.Event.S[0])
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
	env := checkouttest.New(t, 40)
	ctx := context.Background()
	ev := env.Event

	a, b := env.Account(t), env.Account(t)
	due := env.Order(t, a, ev.R[0], ev.R[1])
	env.Clock.Advance(time.Minute)
	later := env.Order(t, b, ev.R[2])
	env.Clock.Advance(boxoffice.DefaultPaymentWindow - 30*time.Second) // due has expired, later has not

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
	checkouttest.WantOrder(t, env.FindOrder(t, due.ID), boxoffice.OrderExpired, "")
	checkouttest.WantOrder(t, env.FindOrder(t, later.ID), boxoffice.OrderPendingPayment, "")
	if labels, _ := env.MyHolds(t, a); len(labels) != 0 {
		t.Errorf("holds of the expired order's account %v, want released", labels)
	}
	if labels, _ := env.MyHolds(t, b); !slices.Equal(labels, []string{ev.R[2]}) {
		t.Errorf("holds of the payable order's account %v, want %v", labels, []string{ev.R[2]})
	}

	// An order replaced by the account's newer checkout is cancelled, not
	// expired, and the newer order keeps the holds of its seats.
	c := env.Account(t)
	old := env.Order(t, c, ev.S[0])
	env.Clock.Advance(time.Minute)
	env.Order(t, c, ev.S[0], ev.S[1])
	env.Clock.Advance(boxoffice.DefaultPaymentWindow - 30*time.Second)
	if _, err := env.Orders.ExpireOrders(ctx); err != nil {
		t.Fatal(err)
	}
	checkouttest.WantOrder(t, env.FindOrder(t, old.ID), boxoffice.OrderCancelled, boxoffice.ReasonReplaced)
	if labels, _ := env.MyHolds(t, c); !slices.Equal(labels, []string{ev.S[0], ev.S[1]}) {
		t.Errorf("holds %v, want %v kept for the payable order", labels, []string{ev.S[0], ev.S[1]})
	}
}

// The expiry and a payment racing at the expiry instant: the order always
// ends CONFIRMED (a late payment of free seats is confirmed), never EXPIRED
// after its confirmation.
func TestOrders_ExpireOrders_RaceWithConfirm(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 60)
	ctx := context.Background()
	for round := range 20 {
		o := env.Order(t, env.Account(t), env.Event.Labels[round])
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		env.Clock.Advance(o.ExpiresAt.Sub(env.Clock.Now()))
		storetest.AtOnce(2, func(i int) {
			if i == 0 {
				if _, err := env.Orders.ExpireOrders(ctx); err != nil {
					t.Errorf("ExpireOrders: %v", err)
				}
				return
			}
			if _, err := env.Redirect(o.ID, key, amount); err != nil {
				t.Errorf("redirect: %v", err)
			}
		})
		checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderConfirmed, "")
	}
	env.CheckInvariants(t)
}

// Fans watch their unpaid orders while several instances expire them all
// at once: a fan that sees its order EXPIRED must find its seats free then
// (none still held, as its seat map would show them, nor counted against its
// limit or taken into its next checkout), and the seats it holds again at
// once must stay held, whatever any instance's expiry does later. Each round
// the fans check out their seats again and the orders expire again.
func TestOrders_ExpireOrders_ReleasesBeforeExpired(t *testing.T) {
	t.Parallel()
	const fans, seats, instances, watchers, rounds = 120, 2, 3, 6, 4
	env := checkouttest.New(t, fans*seats)
	ctx := context.Background()
	ev := env.Event
	accts := make([]int64, fans)
	for i := range accts {
		accts[i] = env.Account(t)
	}
	orders := make([]*store.Orders, instances)
	for i := range orders {
		orders[i] = env.NewOrders()
	}
	seatsOf := func(fan int) []string { return slices.Sorted(slices.Values(ev.Labels[fan*seats : (fan+1)*seats])) }
	req := func(fan int) boxoffice.HoldRequest {
		return boxoffice.HoldRequest{EventID: ev.ID, AccountID: accts[fan], Limit: limit, TTL: holdTTL}
	}
	for fan := range fans {
		if _, err := env.Holds.Hold(ctx, req(fan), seatsOf(fan)); err != nil {
			t.Fatalf("fan %d holds %v: %v", fan, seatsOf(fan), err)
		}
	}
	for round := range rounds {
		ids := make([]string, fans)
		for fan := range fans {
			o, err := env.Orders.CreateOrder(ctx, ev.ID, accts[fan])
			if err != nil || len(o.Items) != seats {
				t.Fatalf("round %d: fan %d checks out: %v, %v; want an order of %v", round, fan, o, err, seatsOf(fan))
			}
			ids[fan] = o.ID
		}
		env.Clock.Advance(boxoffice.DefaultPaymentWindow + time.Second)

		// Watcher w watches the orders of fans w, w+watchers, ...: it reads
		// which of them are EXPIRED, and for each new one it looks at the
		// fan's holds, then holds the seats again as the fan would.
		storetest.AtOnce(instances+watchers, func(i int) {
			if i < instances {
				if _, err := orders[i].ExpireOrders(ctx); err != nil {
					t.Errorf("instance %d: ExpireOrders: %v", i, err)
				}
				return
			}
			var mine []string
			watching := map[string]int{} // order id -> fan
			for fan := i - instances; fan < fans; fan += watchers {
				mine, watching[ids[fan]] = append(mine, ids[fan]), fan
			}
			for deadline := time.Now().Add(time.Minute); len(watching) > 0; {
				if time.Now().After(deadline) {
					t.Errorf("round %d: orders %v still not EXPIRED after a minute", round, slices.Collect(maps.Keys(watching)))
					return
				}
				rows, err := env.DB.Pool.Query(ctx, `SELECT id FROM orders WHERE id = ANY($1) AND status = 'EXPIRED'`, mine)
				if err != nil {
					t.Error(err)
					return
				}
				expired, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Error(err)
					return
				}
				for _, id := range expired {
					fan, ok := watching[id]
					if !ok {
						continue
					}
					delete(watching, id)
					if held, _, err := env.Holds.MyHolds(ctx, ev.ID, accts[fan]); err != nil || len(held) != 0 {
						t.Errorf("round %d: fan %d saw order %s EXPIRED while it still held %v (%v); want its seats free",
							round, fan, id, held, err)
					}
					if _, err := env.Holds.Hold(ctx, req(fan), seatsOf(fan)); err != nil {
						t.Errorf("round %d: fan %d holds %v again after its order expired: %v", round, fan, seatsOf(fan), err)
					}
				}
			}
		})
		for fan := range fans {
			if held, _ := env.MyHolds(t, accts[fan]); !slices.Equal(held, seatsOf(fan)) {
				t.Fatalf("round %d: fan %d holds %v after every instance's expiry, want %v: the holds it took after seeing its order EXPIRED",
					round, fan, held, seatsOf(fan))
			}
		}
	}
}

// A payment confirmed at the moment two instances expire its order, round
// after round, while rivals try again and again to hold the order's seat:
// the confirmation waits on a lock the test holds (it has asked the PG and
// is in its transaction), and the test lets it go as the instances start,
// one of them a little later each round. Once the confirmation has claimed
// the seat, no expiry may end the claim: an order that ends CONFIRMED had
// its seat held by no rival at any time (a rival that held it first makes
// the order REFUNDED).
func TestOrders_ExpireOrders_KeepsAClaim(t *testing.T) {
	t.Parallel()
	const rounds, rivals = 30, 4
	env := checkouttest.New(t, rounds)
	ctx := context.Background()
	ev := env.Event
	expirers := []*store.Orders{env.NewOrders(), env.NewOrders()}
	outcomes := map[boxoffice.OrderStatus]int{}
	for round := range rounds {
		o := env.Order(t, env.Account(t), ev.Labels[round])
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		env.Clock.Advance(boxoffice.DefaultPaymentWindow + time.Second)
		release := lockPurchases(t, env, o.AccountID)
		confirmed := make(chan struct{})
		go func() {
			defer close(confirmed)
			if _, err := env.Redirect(o.ID, key, amount); err != nil {
				t.Errorf("round %d: confirm order %s: %v", round, o.ID, err)
			}
		}()
		waitForLockWait(t, env)
		var rivalHeld atomic.Bool
		storetest.AtOnce(len(expirers)+1+rivals, func(i int) {
			switch {
			case i < len(expirers):
				time.Sleep(time.Duration(i) * rivalDelays[round%len(rivalDelays)])
				if _, err := expirers[i].ExpireOrders(ctx); err != nil {
					t.Errorf("instance %d: ExpireOrders: %v", i, err)
				}
			case i == len(expirers):
				release()
			default:
				req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: int64(round*rivals + i + 1), Limit: limit, TTL: holdTTL}
				for {
					_, err := env.Holds.Hold(ctx, req, o.Seats())
					if err == nil {
						rivalHeld.Store(true)
						return
					} else if boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
						t.Errorf("round %d: rival holds %v: %v", round, o.Seats(), err)
						return
					}
					select {
					case <-confirmed:
						return
					default:
					}
				}
			}
		})
		<-confirmed
		o = env.FindOrder(t, o.ID)
		outcomes[o.Status]++
		if o.Status == boxoffice.OrderConfirmed && rivalHeld.Load() {
			t.Errorf("round %d: order %s is CONFIRMED, and a rival held its seat %v meanwhile: the expiry ended the confirmation's claim",
				round, o.ID, o.Seats())
		}
	}
	t.Logf("orders by status: %v", outcomes)
	env.CheckInvariants(t)
}

func TestOrders_FindStuckOrders(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	ctx := context.Background()
	ev := env.Event

	// Paid late for a seat sold meanwhile, while the PG cannot refund.
	late := env.Order(t, env.Account(t), ev.R[0])
	key, amount := env.Pay(t, late, sandbox.ScenarioWebhookNever)
	env.Expire(t)
	other := env.Order(t, env.Account(t), ev.R[0])
	k2, a2 := env.Pay(t, other, sandbox.ScenarioWebhookNever)
	env.MustRedirect(t, other.ID, k2, a2)
	env.Gateway().CancelDown.Store(true)
	c := env.MustRedirect(t, late.ID, key, amount)
	if c.Outcome != boxoffice.PaymentRefundPending {
		t.Fatalf("outcome %q with the PG down, want refund_pending", c.Outcome)
	}
	// Pending past its expiry: the expiry worker has not run.
	overdue := env.Order(t, env.Account(t), ev.S[0])
	env.Clock.Advance(boxoffice.DefaultPaymentWindow + time.Second)

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
	env.Gateway().CancelDown.Store(false)
	if _, err := env.Checkout.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Orders.ExpireOrders(ctx); err != nil {
		t.Fatal(err)
	}
	if out, _ := env.Outcome(t, key); out != boxoffice.PaymentRefunded || env.PGStatus(t, key) != boxoffice.PaymentStatusCanceled {
		t.Errorf("after reconciling: outcome %q, PG %s; want refunded, CANCELED", out, env.PGStatus(t, key))
	}
	if stuck, err := env.Orders.FindStuckOrders(ctx, 10); err != nil || len(stuck) != 0 {
		t.Errorf("stuck orders after reconciling %v (%v), want none", stuck, err)
	}
	env.CheckInvariants(t)
}
