package checkout_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// The limit and hold time of the holds these tests make.
const (
	figuresLimit   = boxoffice.DefaultMaxPerAccount
	figuresHoldTTL = time.Minute
)

// saleFigures reads the env's event's sale figures.
func saleFigures(env *checkouttest.Env, tb testing.TB) boxoffice.SaleFigures {
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
func TestSaleFigures(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	ctx := context.Background()
	ev := env.Event

	f := saleFigures(env, t)
	if f.Free != 20 || f.Sold+f.Held+f.Blocked != 0 || f.Revenue != 0 || f.Currency != "KRW" || len(f.Grades) != 2 {
		t.Fatalf("before the sale: %+v, want 20 free seats in two grades, no revenue, KRW", f)
	}

	// A hold in Redis only.
	if _, err := env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: ev.ID, AccountID: env.Account(t), Limit: figuresLimit, TTL: figuresHoldTTL}, []string{ev.R[0]}); err != nil {
		t.Fatal(err)
	}
	// An unpaid order.
	env.Order(t, env.Account(t), ev.R[1], ev.S[0])
	// Two confirmed orders, one of them refunded in part.
	sold(env, t, env.Account(t), ev.R[2], ev.S[1])
	refunded, _ := sold(env, t, env.Account(t), ev.R[3], ev.R[4])
	svc, _ := refunds(env)
	if _, err := svc.Refund(ctx, boxoffice.RefundRequest{OrderID: refunded.ID, Seats: []string{ev.R[4]}, Reason: "변경"}); err != nil {
		t.Fatal(err)
	}
	// A payment refused: the redirect's amount is not the order's. Its
	// holds live on until they expire.
	failed := env.Order(t, env.Account(t), ev.R[5])
	key, amount := env.Pay(t, failed, sandbox.ScenarioWebhookNever)
	if c := env.MustRedirect(t, failed.ID, key, amount+1); c.Order.Status != boxoffice.OrderFailed {
		t.Fatalf("tampered order is %s, want FAILED", c.Order.Status)
	}

	// Two seats an admin held back.
	blocks := &store.Blocks{DB: env.DB, Holds: env.Holds}
	if _, err := blocks.ChangeBlocks(ctx, boxoffice.BlockRequest{
		EventID: ev.ID, AdminID: env.Account(t), Action: boxoffice.BlockActionBlock, Seats: []string{ev.R[6], ev.S[2]},
	}); err != nil {
		t.Fatal(err)
	}

	f = saleFigures(env, t)
	want := boxoffice.SaleFigures{
		Sold: 3, Held: 4, Blocked: 2, Free: 11, Revenue: 150000 + 100000 + 150000, Currency: "KRW",
		Grades:           []boxoffice.GradeFigures{{Code: "R", Sold: 2, Held: 3, Free: 4, Blocked: 1}, {Code: "S", Sold: 1, Held: 1, Free: 7, Blocked: 1}},
		OrdersLastMinute: 2, PaymentFailures: 1, Refunds: 1,
	}
	if fmt.Sprint(f) != fmt.Sprint(want) {
		t.Errorf("during the sale:\n got %+v\nwant %+v", f, want)
	}
	checkSums(t, f, 20)

	// A minute later the confirmations are no longer the last minute's.
	env.Clock.Advance(boxoffice.DefaultPaymentWindow + 2*figuresHoldTTL)
	if f := saleFigures(env, t); f.OrdersLastMinute != 0 || f.Sold != 3 || f.Revenue != want.Revenue {
		t.Errorf("later: %+v, want 0 orders in the last minute, 3 sold for %d", f, want.Revenue)
	}

	// A payment that came after its order expired and another fan took the
	// seat is refunded by the confirmation: a payment failure too, though
	// its order ends REFUNDED, not FAILED; the admin's refund above is not.
	late := env.Order(t, env.Account(t), ev.S[3])
	key, amount = env.Pay(t, late, sandbox.ScenarioWebhookNever)
	env.Expire(t)
	taker := env.Account(t)
	if _, err := env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: ev.ID, AccountID: taker, Limit: figuresLimit, TTL: figuresHoldTTL}, []string{ev.S[3]}); err != nil {
		t.Fatal(err)
	}
	if c := env.MustRedirect(t, late.ID, key, amount); c.Order.Status != boxoffice.OrderRefunded {
		t.Fatalf("late payment's order is %s, want REFUNDED", c.Order.Status)
	}
	if f := saleFigures(env, t); f.PaymentFailures != 2 || f.Refunds != 1 {
		t.Errorf("after the late payment: %d payment failures and %d refunds, want 2 and 1", f.PaymentFailures, f.Refunds)
	}
}

// Hundreds of fans hold, check out and pay for the seats of a small event
// at once, while watchers read the figures again and again: every read adds
// up to the event's seats, sold and revenue never go down, and at the end
// the figures are the sold seats and the money paid.
func TestSaleFigures_Race(t *testing.T) {
	t.Parallel()
	const seats, fans, watchers = 60, 200, 4
	env := checkouttest.New(t, seats)
	ctx := context.Background()
	var done atomic.Bool
	var wg sync.WaitGroup
	for range watchers {
		wg.Go(func() {
			var last boxoffice.SaleFigures
			for reads := 0; !done.Load() || reads < 2; reads++ {
				f := saleFigures(env, t)
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
		accounts[i] = env.Account(t)
	}
	var paid atomic.Int64
	storetest.AtOnce(fans, func(i int) {
		acct := accounts[i]
		label := env.Event.Labels[i%seats]
		if _, err := env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, Limit: figuresLimit, TTL: figuresHoldTTL}, []string{label}); err != nil {
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
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		if c := env.MustRedirect(t, o.ID, key, amount); c.Order.Status == boxoffice.OrderConfirmed {
			paid.Add(o.Amount.Amount)
		}
	})
	done.Store(true)
	wg.Wait()

	f := saleFigures(env, t)
	checkSums(t, f, seats)
	sold := env.Count(t, `SELECT count(*) FROM sold_seat WHERE event_id = $1`, env.Event.ID)
	unpaid := env.Count(t, `SELECT count(*) FROM orders WHERE event_id = $1 AND status = 'PENDING_PAYMENT'`, env.Event.ID)
	if f.Sold != sold || f.Revenue != paid.Load() || f.Held != unpaid || sold+unpaid != seats {
		t.Errorf("after the sale: %+v; want %d sold for %d and %d held in unpaid orders, all %d seats taken", f, sold, paid.Load(), unpaid, seats)
	}
}
