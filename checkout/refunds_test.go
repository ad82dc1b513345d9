package checkout_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// refundGateway is the sandbox's client, whose refunds a test can make the
// PG refuse.
type refundGateway struct {
	*toss.Client
	refuse atomic.Bool
}

func (g *refundGateway) Cancel(ctx context.Context, paymentKey string, r boxoffice.CancelRequest) (*boxoffice.Payment, error) {
	if g.refuse.Load() {
		return nil, &boxoffice.PGError{Status: 403, Code: boxoffice.PGNotCancelablePayment, Message: "refused by the test"}
	}
	return g.Client.Cancel(ctx, paymentKey, r)
}

// refunds returns a Service of the env whose PG can refuse refunds.
func refunds(env *checkouttest.Env) (*checkout.Service, *refundGateway) {
	g := &refundGateway{Client: env.PG}
	return env.NewService(env.Orders, g), g
}

// sold confirms an order of labels for acct and returns it with its payment key.
func sold(env *checkouttest.Env, tb testing.TB, acct int64, labels ...string) (*boxoffice.Order, string) {
	tb.Helper()
	o := env.Order(tb, acct, labels...)
	key, amount := env.Pay(tb, o, sandbox.ScenarioWebhookNever)
	if c := env.MustRedirect(tb, o.ID, key, amount); c.Order.Status != boxoffice.OrderConfirmed {
		tb.Fatalf("order %s is %s, want CONFIRMED", o.ID, c.Order.Status)
	}
	return o, key
}

// checkRefunds asserts what no interleaving of refunds may break, for the
// order (paid with paymentKey) of acct:
//   - each seat is in at most one done refund, and the money refunded (the
//     done refunds) is what the PG refunded, never more than was paid;
//   - the order's live tickets, its sold seats and the seats of no done
//     refund are the same seats, and the account's purchase count is their
//     number, in PostgreSQL and in Redis's copy (bought:{e});
//   - the seats of done refunds are not sold in Redis's copy, the others are;
//   - the order is REFUNDED exactly when no ticket is left.
func checkRefunds(env *checkouttest.Env, tb testing.TB, o *boxoffice.Order, paymentKey string) {
	tb.Helper()
	ctx := context.Background()
	p, err := env.PG.GetPayment(ctx, paymentKey)
	if err != nil {
		tb.Fatal(err)
	}
	refunded := env.Count(tb, `SELECT COALESCE(sum(amount), 0)::int FROM refund WHERE order_id = $1 AND status = 'done'`, o.ID)
	if int64(refunded) != p.TotalAmount-p.BalanceAmount || int64(refunded) > o.Amount.Amount {
		tb.Errorf("order %s: refunds done of %d, the PG refunded %d of %d", o.ID, refunded, p.TotalAmount-p.BalanceAmount, o.Amount.Amount)
	}
	var live, soldRows, unrefunded []string
	for what, q := range map[*[]string]string{
		&live:       `SELECT seat_label FROM ticket WHERE order_id = $1 AND refunded_at IS NULL ORDER BY seat_label`,
		&soldRows:   `SELECT seat_label FROM sold_seat WHERE order_id = $1 ORDER BY seat_label`,
		&unrefunded: `SELECT seat_label FROM order_item i WHERE order_id = $1 AND NOT EXISTS (SELECT 1 FROM refund_item ri JOIN refund r ON r.id = ri.refund_id WHERE ri.order_id = i.order_id AND ri.seat_label = i.seat_label AND r.status = 'done') ORDER BY seat_label`,
	} {
		rows, err := env.DB.Pool.Query(ctx, q, o.ID)
		if err != nil {
			tb.Fatal(err)
		}
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				tb.Fatal(err)
			}
			*what = append(*what, l)
		}
		rows.Close()
	}
	if !slices.Equal(live, soldRows) || !slices.Equal(live, unrefunded) {
		tb.Errorf("order %s: live tickets %v, sold seats %v, seats not refunded %v; want the same", o.ID, live, soldRows, unrefunded)
	}
	if n := env.Count(tb, `SELECT tickets FROM purchase_count WHERE event_id = $1 AND account_id = $2`, o.EventID, o.AccountID); n != len(live) {
		tb.Errorf("order %s: purchase count %d, want %d", o.ID, n, len(live))
	}
	bought, err := env.R.Client.HGet(ctx, env.R.Key("bought:{%d}", o.EventID), strconv.FormatInt(o.AccountID, 10)).Int()
	if err != nil && len(live) > 0 || bought != len(live) {
		tb.Errorf("order %s: Redis counts %d bought (%v), want %d", o.ID, bought, err, len(live))
	}
	for _, l := range o.Seats() {
		in, err := env.R.Client.SIsMember(ctx, env.R.Key("sold:{%d}", o.EventID), l).Result()
		if err != nil {
			tb.Fatal(err)
		}
		if want := slices.Contains(live, l); in != want {
			tb.Errorf("order %s: seat %s sold in Redis %v, want %v", o.ID, l, in, want)
		}
	}
	if st := env.FindOrder(tb, o.ID).Status; (st == boxoffice.OrderRefunded) != (len(live) == 0) || (st != boxoffice.OrderRefunded && st != boxoffice.OrderConfirmed) {
		tb.Errorf("order %s is %s with %d live tickets", o.ID, st, len(live))
	}
}

// Ten admins refund the whole order, ten refund its first ticket and ten the
// rest, while the PG's webhook for those refunds is handled again and again,
// round after round: each seat is freed once, the limit given back once, the
// PG asked once per refund, and the seats can be sold again.
func TestService_Refund_Race(t *testing.T) {
	t.Parallel()
	const rounds, admins, webhooks = 8, 10, 10
	env := checkouttest.New(t, rounds*3+checkouttest.Limit)
	ctx := context.Background()
	refunds, _ := refunds(env)
	for round := range rounds {
		acct := env.Account(t)
		seats := env.Event.Labels[round*3 : round*3+3]
		o, key := sold(env, t, acct, seats...)
		var ok atomic.Int64
		storetest.AtOnce(3*admins+webhooks, func(i int) {
			if i >= 3*admins {
				if _, err := refunds.ApplyPGCancels(ctx, key, o.ID); err != nil {
					t.Errorf("round %d: webhook: %v", round, err)
				}
				return
			}
			req := boxoffice.RefundRequest{OrderID: o.ID, Reason: "the show moved", AdminID: acct}
			switch i % 3 {
			case 1:
				req.Seats = seats[:1]
			case 2:
				req.Seats = seats[1:]
			}
			res, err := refunds.Refund(ctx, req)
			if err == nil {
				ok.Add(1)
				if res.RefundedAmount <= 0 || len(res.Seats) == 0 {
					t.Errorf("round %d: refund %+v", round, res)
				}
			} else if code := boxoffice.ErrorCode(err); code != boxoffice.ECONFLICT {
				t.Errorf("round %d: refund %v: %v", round, req.Seats, err)
			}
		})
		if n := env.Count(t, `SELECT count(*) FROM refund WHERE order_id = $1 AND status = 'done'`, o.ID); int64(n) != ok.Load() || n == 0 {
			t.Errorf("round %d: %d refunds succeeded, %d done", round, ok.Load(), n)
		}
		p, err := env.PG.GetPayment(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Cancels) != int(ok.Load()) {
			t.Errorf("round %d: the PG made %d refunds, want %d (one per refund)", round, len(p.Cancels), ok.Load())
		}
		checkRefunds(env, t, o, key)
		// The rest, if any, is refunded, and then the seats sell again and the
		// buyer may buy up to the limit again.
		if _, err := refunds.Refund(ctx, boxoffice.RefundRequest{OrderID: o.ID, Reason: "the rest"}); err != nil && boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
			t.Fatalf("round %d: refund the rest: %v", round, err)
		}
		checkRefunds(env, t, o, key)
		if st := env.FindOrder(t, o.ID).Status; st != boxoffice.OrderRefunded {
			t.Fatalf("round %d: order %s is %s after refunding all, want REFUNDED", round, o.ID, st)
		}
		again, _ := sold(env, t, env.Account(t), seats...)
		checkouttest.WantOrder(t, env.FindOrder(t, again.ID), boxoffice.OrderConfirmed, "")
	}
	buyer := env.Account(t)
	o, _ := sold(env, t, buyer, env.Event.Labels[rounds*3])
	if _, err := refunds.Refund(ctx, boxoffice.RefundRequest{OrderID: o.ID, Reason: "checkouttest.Limit back"}); err != nil {
		t.Fatal(err)
	}
	req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: buyer, Limit: checkouttest.Limit, TTL: checkouttest.HoldTTL}
	if _, err := env.Holds.Hold(ctx, req, env.Event.Labels[rounds*3:rounds*3+checkouttest.Limit]); err != nil {
		t.Errorf("the buyer holds %d seats after its refund (checkouttest.Limit %d): %v", checkouttest.Limit, checkouttest.Limit, err)
	}
	env.CheckInvariants(t)
}

// A refund racing a load of Redis's sold-seat copy that read PostgreSQL
// before the refund committed: the copy never counts the refunded seat as
// sold afterwards.
func TestService_Refund_RaceWithCacheLoad(t *testing.T) {
	t.Parallel()
	const rounds = 20
	env := checkouttest.New(t, rounds)
	ctx := context.Background()
	refunds, _ := refunds(env)
	for round := range rounds {
		o, key := sold(env, t, env.Account(t), env.Event.Labels[round])
		storetest.AtOnce(2, func(i int) {
			if i == 0 {
				if _, err := refunds.Refund(ctx, boxoffice.RefundRequest{OrderID: o.ID, Reason: "race"}); err != nil {
					t.Errorf("refund: %v", err)
				}
				return
			}
			env.R.Client.Del(ctx, env.R.Key("cache:ready:{%d}", env.Event.ID))
			if _, err := env.Holds.SeatStatuses(ctx, boxoffice.Shopper{EventID: env.Event.ID, AccountID: 1}); err != nil {
				t.Errorf("seat statuses: %v", err)
			}
		})
		checkRefunds(env, t, o, key)
	}
}

// Bad input changes nothing: an empty reason, seats not in the order, seats
// refunded already, an order that is not confirmed, a PG that refuses.
func TestService_Refund_Refused(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 10)
	ctx := context.Background()
	refunds, gw := refunds(env)
	acct := env.Account(t)
	o, key := sold(env, t, acct, env.Event.R[0], env.Event.R[1])
	if _, err := refunds.Refund(ctx, boxoffice.RefundRequest{OrderID: o.ID, Seats: []string{env.Event.R[0]}, Reason: "first"}); err != nil {
		t.Fatal(err)
	}
	pending := env.Order(t, env.Account(t), env.Event.S[0])
	for _, tt := range []struct {
		name string
		req  boxoffice.RefundRequest
		code string
	}{
		{"EmptyReason", boxoffice.RefundRequest{OrderID: o.ID, Reason: "  "}, boxoffice.EINVALID},
		{"NotInOrder", boxoffice.RefundRequest{OrderID: o.ID, Seats: []string{env.Event.S[3]}, Reason: "x"}, boxoffice.EINVALID},
		{"Refunded", boxoffice.RefundRequest{OrderID: o.ID, Seats: []string{env.Event.R[0]}, Reason: "x"}, boxoffice.ECONFLICT},
		{"NotConfirmed", boxoffice.RefundRequest{OrderID: pending.ID, Reason: "x"}, boxoffice.ECONFLICT},
		{"NoOrder", boxoffice.RefundRequest{OrderID: "nosuchorder00000000000", Reason: "x"}, boxoffice.ENOTFOUND},
		{"PGRefuses", boxoffice.RefundRequest{OrderID: o.ID, Reason: "x"}, boxoffice.ECONFLICT},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gw.refuse.Store(tt.name == "PGRefuses")
			defer gw.refuse.Store(false)
			_, err := refunds.Refund(ctx, tt.req)
			if got := boxoffice.ErrorCode(err); got != tt.code {
				t.Errorf("Refund(%+v) = %v, want %s", tt.req, err, tt.code)
			}
			checkRefunds(env, t, o, key)
			if n := env.Count(t, `SELECT count(*) FROM refund WHERE order_id = $1 AND status = 'done'`, o.ID); n != 1 {
				t.Errorf("%d refunds done, want 1", n)
			}
		})
	}
	if n := env.Count(t, `SELECT count(*) FROM audit_log WHERE order_id = $1 AND action = $2`, o.ID, store.AuditRefundFailed); n != 1 {
		t.Errorf("%d audit rows of the refused refund, want 1", n)
	}
	// After the refusal the seat can still be refunded.
	if res, err := refunds.Refund(ctx, boxoffice.RefundRequest{OrderID: o.ID, Reason: "again"}); err != nil || res.Status != boxoffice.OrderRefunded {
		t.Errorf("refund after a refusal: %+v, %v; want REFUNDED", res, err)
	}
	checkRefunds(env, t, o, key)
}

// A refund made at the PG's dashboard, part then the rest, learned from its
// webhook delivered many times at once: applied once each, as the admin's
// refund of those tickets would be.
func TestService_ApplyPGCancels(t *testing.T) {
	t.Parallel()
	const rounds, webhooks = 6, 20
	env := checkouttest.New(t, rounds*4)
	ctx := context.Background()
	refunds, _ := refunds(env)
	for round := range rounds {
		seats := []string{env.Event.R[round], env.Event.S[round], env.Event.S[rounds+round]}
		o, key := sold(env, t, env.Account(t), seats...)
		sPrice := o.Items[len(o.Items)-1].Price
		for step, amount := range []int64{sPrice, o.Amount.Amount - sPrice} {
			req := boxoffice.CancelRequest{Reason: "고객 요청", Amount: &boxoffice.Money{Amount: amount, Currency: o.Amount.Currency}, RefundID: fmt.Sprintf("dashboard-%d", step)}
			if _, err := env.PG.Cancel(ctx, key, req); err != nil {
				t.Fatal(err)
			}
			storetest.AtOnce(webhooks, func(int) {
				if _, err := refunds.ApplyPGCancels(ctx, key, o.ID); err != nil {
					t.Errorf("round %d: webhook: %v", round, err)
				}
			})
			if n := env.Count(t, `SELECT count(*) FROM refund WHERE order_id = $1 AND status = 'done' AND source = 'pg'`, o.ID); n != step+1 {
				t.Errorf("round %d step %d: %d refunds from the PG done, want %d", round, step, n, step+1)
			}
			checkRefunds(env, t, o, key)
		}
		if st := env.FindOrder(t, o.ID).Status; st != boxoffice.OrderRefunded {
			t.Errorf("round %d: order %s is %s, want REFUNDED", round, o.ID, st)
		}
	}
	env.CheckInvariants(t)
}
