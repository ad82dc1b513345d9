package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// One unpaid order per account and event: the accounts' checkouts race each
// other and the payments of the orders they replace. Whatever the
// interleaving, no seat is in two live orders, an account has at most one
// order that may still be paid, a replaced order's payment is refused or
// refunded as "replaced" (never as a rival's sale), and money kept means
// tickets (checkInvariants).
func TestOrders_CreateOrder_ReplacesUnpaid(t *testing.T) {
	t.Parallel()
	const fans, rounds, checkouts = 40, 3, 4
	env := checkouttest.New(t, fans*(1+rounds*checkouts))
	ctx := context.Background()
	ev := env.Event
	// Each fan buys up to 1+rounds*checkouts seats: the limit is not what this tests.
	if _, err := env.DB.Pool.Exec(ctx, `UPDATE event SET max_per_account = 20 WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	accts := make([]int64, fans)
	for i := range accts {
		accts[i] = env.Account(t)
	}
	next := fans // the next free seat of ev.Labels; fan i's first seat is ev.Labels[i]
	for round := range rounds {
		olds := make([]*boxoffice.Order, fans)
		keys := make([]string, fans)
		amounts := make([]int64, fans)
		for fan := range fans {
			req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: accts[fan], Limit: 20, TTL: holdTTL}
			if round == 0 {
				if _, err := env.Holds.Hold(ctx, req, []string{ev.Labels[fan]}); err != nil {
					t.Fatal(err)
				}
			}
			o, err := env.Orders.CreateOrder(ctx, ev.ID, accts[fan])
			if err != nil {
				t.Fatalf("round %d: fan %d checks out: %v", round, fan, err)
			}
			olds[fan] = o
			keys[fan], amounts[fan] = env.Pay(t, o, sandbox.ScenarioWebhookNever)
		}
		seats := make([][]string, fans)
		for fan := range fans {
			seats[fan] = ev.Labels[next : next+checkouts]
			next += checkouts
		}
		// Per fan: the payment of its order, and checkouts, each of one more seat.
		storetest.AtOnce(fans*(1+checkouts), func(i int) {
			fan, k := i%fans, i/fans
			if k == 0 {
				if _, err := env.Redirect(olds[fan].ID, keys[fan], amounts[fan]); err != nil {
					t.Errorf("round %d: fan %d pays order %s: %v", round, fan, olds[fan].ID, err)
				}
				return
			}
			req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: accts[fan], Limit: 20, TTL: holdTTL}
			if _, err := env.Holds.Hold(ctx, req, []string{seats[fan][k-1]}); err != nil {
				t.Errorf("round %d: fan %d holds %s: %v", round, fan, seats[fan][k-1], err)
				return
			}
			if _, err := env.Orders.CreateOrder(ctx, ev.ID, accts[fan]); err != nil &&
				!slices.Contains([]string{boxoffice.ESEATTAKEN, boxoffice.ENOHOLDS}, boxoffice.ErrorCode(err)) {
				t.Errorf("round %d: fan %d checks out: %v", round, fan, err)
			}
		})
		for fan := range fans {
			o := env.FindOrder(t, olds[fan].ID)
			outcome, reason := env.Outcome(t, keys[fan])
			switch o.Status {
			case boxoffice.OrderConfirmed:
				if outcome != boxoffice.PaymentConfirmed {
					t.Errorf("round %d: order %s CONFIRMED, its payment %s %s", round, o.ID, outcome, reason)
				}
			case boxoffice.OrderCancelled, boxoffice.OrderRefunded: // refunded: its payment was confirmed at the PG meanwhile
				if o.FailureCode != boxoffice.ReasonReplaced || reason != boxoffice.ReasonReplaced ||
					(o.Status == boxoffice.OrderRefunded) != (outcome == boxoffice.PaymentRefunded) {
					t.Errorf("round %d: order %s %s (%s), its payment %s (%s); want both replaced, refunded if REFUNDED", round, o.ID, o.Status, o.FailureCode, outcome, reason)
				}
			default:
				t.Errorf("round %d: order %s is %s (%s), want CONFIRMED, or CANCELLED or REFUNDED (replaced)", round, o.ID, o.Status, o.FailureCode)
			}
		}
		for what, query := range map[string]string{
			"seats in two live orders": `
				SELECT count(*) FROM (SELECT i.seat_label FROM order_item i JOIN orders o ON o.id = i.order_id
				WHERE o.event_id = $1 AND o.status IN ('PENDING_PAYMENT', 'EXPIRED', 'CONFIRMED')
				GROUP BY i.seat_label HAVING count(*) > 1) x`,
			"accounts with two orders that may still be paid": `
				SELECT count(*) FROM (SELECT account_id FROM orders WHERE event_id = $1 AND status IN ('PENDING_PAYMENT', 'EXPIRED')
				GROUP BY account_id HAVING count(*) > 1) x`,
			"payments of replaced orders refused or refunded for another reason": `
				SELECT count(*) FROM payment p JOIN orders o ON o.id = p.order_id
				WHERE o.event_id = $1 AND o.failure_code = 'replaced' AND p.reason <> 'replaced'`,
		} {
			if n := env.Count(t, query, ev.ID); n != 0 {
				t.Errorf("round %d: %d %s", round, n, what)
			}
		}
	}
	env.CheckInvariants(t)
}
