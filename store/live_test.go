package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// saleFigures reads the env's event's sale figures.
func (env *checkoutEnv) saleFigures(tb testing.TB) boxoffice.SaleFigures {
	tb.Helper()
	f, err := env.Holds.SaleFigures(context.Background(), env.Event.ID)
	if err != nil {
		tb.Fatalf("SaleFigures: %v", err)
	}
	return f
}

// checkSums reports seats counted in no state or in two: per grade and in
// total, sold+held+free+blocked is the event's seats, and the totals are the
// grades' sums.
func checkSums(tb testing.TB, f boxoffice.SaleFigures, total int) {
	tb.Helper()
	var sum boxoffice.GradeFigures
	for _, g := range f.Grades {
		sum.Sold, sum.Held, sum.Free, sum.Blocked = sum.Sold+g.Sold, sum.Held+g.Held, sum.Free+g.Free, sum.Blocked+g.Blocked
	}
	if f.Sold+f.Held+f.Free+f.Blocked != total || sum.Sold != f.Sold || sum.Held != f.Held || sum.Free != f.Free || sum.Blocked != f.Blocked {
		tb.Errorf("figures %+v do not add up to %d seats", f, total)
	}
}

// A sale in progress: a hold, an unpaid order, confirmed orders, a refund
// and a failed payment, each counted where boxoffice.SaleFigures says.
func TestHolds_SaleFigures(t *testing.T) {
	t.Parallel()
	env := newCheckoutEnv(t, 20)
	ctx := context.Background()
	ev := env.Event

	f := env.saleFigures(t)
	if f.Free != 20 || f.Sold+f.Held+f.Blocked != 0 || f.Revenue != 0 || f.Currency != "KRW" || len(f.Grades) != 2 {
		t.Fatalf("before the sale: %+v, want 20 free seats in two grades, no revenue, KRW", f)
	}

	// A hold in Redis only.
	if _, err := env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: ev.ID, AccountID: env.account(t), Limit: limit, TTL: holdTTL}, []string{ev.R[0]}); err != nil {
		t.Fatal(err)
	}
	// An unpaid order.
	env.order(t, env.account(t), ev.R[1], ev.S[0])
	// Two confirmed orders, one of them refunded in part.
	env.sold(t, env.account(t), ev.R[2], ev.S[1])
	refunded, _ := env.sold(t, env.account(t), ev.R[3], ev.R[4])
	refunds, _ := env.refunds()
	if _, err := refunds.Refund(ctx, boxoffice.RefundRequest{OrderID: refunded.ID, Seats: []string{ev.R[4]}, Reason: "변경"}); err != nil {
		t.Fatal(err)
	}
	// A payment refused: the redirect's amount is not the order's. Its
	// holds live on until they expire.
	failed := env.order(t, env.account(t), ev.R[5])
	key, amount := env.pay(t, failed, sandbox.ScenarioWebhookNever)
	if c := env.mustRedirect(t, failed.ID, key, amount+1); c.Order.Status != boxoffice.OrderFailed {
		t.Fatalf("tampered order is %s, want FAILED", c.Order.Status)
	}

	// No seat can be blocked yet (store.blockedSeatsSQL selects none until
	// the blocked_seat table exists): Blocked is 0, in total and per grade.
	f = env.saleFigures(t)
	want := boxoffice.SaleFigures{
		Sold: 3, Held: 4, Free: 13, Revenue: 150000 + 100000 + 150000, Currency: "KRW",
		Grades:           []boxoffice.GradeFigures{{Code: "R", Sold: 2, Held: 3, Free: 5}, {Code: "S", Sold: 1, Held: 1, Free: 8}},
		OrdersLastMinute: 2, PaymentFailures: 1, Refunds: 1,
	}
	if fmt.Sprint(f) != fmt.Sprint(want) {
		t.Errorf("during the sale:\n got %+v\nwant %+v", f, want)
	}
	checkSums(t, f, 20)

	// A minute later the confirmations are no longer the last minute's.
	env.Clock.advance(boxoffice.DefaultPaymentWindow + 2*holdTTL)
	if f := env.saleFigures(t); f.OrdersLastMinute != 0 || f.Sold != 3 || f.Revenue != want.Revenue {
		t.Errorf("later: %+v, want 0 orders in the last minute, 3 sold for %d", f, want.Revenue)
	}
}

// Hundreds of fans hold, check out and pay for the seats of a small event
// at once, while watchers read the figures again and again: every read adds
// up to the event's seats, sold and revenue never go down, and at the end
// the figures are the sold seats and the money paid.
func TestHolds_SaleFigures_Race(t *testing.T) {
	t.Parallel()
	const seats, fans, watchers = 60, 200, 4
	env := newCheckoutEnv(t, seats)
	ctx := context.Background()
	var done atomic.Bool
	var wg sync.WaitGroup
	for range watchers {
		wg.Go(func() {
			var last boxoffice.SaleFigures
			for reads := 0; !done.Load() || reads < 2; reads++ {
				f := env.saleFigures(t)
				checkSums(t, f, seats)
				if f.Sold < last.Sold || f.Revenue < last.Revenue {
					t.Errorf("figures went back: %+v after %+v", f, last)
				}
				last = f
			}
		})
	}
	accounts := make([]int64, fans)
	for i := range accounts {
		accounts[i] = env.account(t)
	}
	var paid atomic.Int64
	storetest.AtOnce(fans, func(i int) {
		acct := accounts[i]
		label := env.Event.Labels[i%seats]
		if _, err := env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: limit, TTL: holdTTL}, []string{label}); err != nil {
			return // another fan holds it
		}
		o, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct)
		if err != nil {
			t.Errorf("fan %d checks out: %v", i, err)
			return
		}
		if i%3 == 0 {
			return // leaves the order unpaid
		}
		key, amount := env.pay(t, o, sandbox.ScenarioWebhookNever)
		if c := env.mustRedirect(t, o.ID, key, amount); c.Order.Status == boxoffice.OrderConfirmed {
			paid.Add(o.Amount)
		}
	})
	done.Store(true)
	wg.Wait()

	f := env.saleFigures(t)
	checkSums(t, f, seats)
	sold := env.count(t, `SELECT count(*) FROM sold_seat WHERE event_id = $1`, env.Event.ID)
	unpaid := env.count(t, `SELECT count(*) FROM orders WHERE event_id = $1 AND status = 'PENDING_PAYMENT'`, env.Event.ID)
	if f.Sold != sold || f.Revenue != paid.Load() || f.Held != unpaid || sold+unpaid != seats {
		t.Errorf("after the sale: %+v; want %d sold for %d and %d held in unpaid orders, all %d seats taken", f, sold, paid.Load(), unpaid, seats)
	}
}
