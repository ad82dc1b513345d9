package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

// ApplyPGCancels applies, once each, the refunds the PG reports for a
// payment (a PAYMENT_STATUS_CHANGED webhook to CANCELED or PARTIAL_CANCELED;
// paymentKey and orderID come from it and are trusted for nothing else: the
// payment is looked up). Each entry of the payment's cancels is:
//
//   - one of ours ("boxoffice refund <id>: ..."): applied if still pending
//     (a refund racing its own webhook is applied once);
//   - one made elsewhere (the PG's dashboard), for an order confirmed with
//     this payment: recorded as a refund "pg:<transactionKey>" of the
//     order's tickets not refunded yet whose prices add up to its amount
//     (all of them for the whole balance), and applied as an admin's
//     refund would be; the refund's PRIMARY KEY applies each cancel once,
//     however often the webhook comes. A cancel no set of tickets adds up
//     to is logged for an admin and left alone.
//
// Cancels of payments that sold nothing (the confirmation's own refunds)
// change nothing. Errors:
// EUNAUTHORIZED when the PG does not know the payment for that order;
// EUNAVAILABLE while the PG does not answer; PostgreSQL's.
func (s *Refunds) ApplyPGCancels(ctx context.Context, paymentKey, orderID string) error {
	p, err := s.PG.GetPayment(ctx, paymentKey)
	switch {
	case boxoffice.IsPGCode(err, boxoffice.PGNotFoundPayment):
		return boxoffice.NewError(boxoffice.EUNAUTHORIZED, "err_pg_unknown_payment")
	case boxoffice.IsPGTemporary(err):
		return boxoffice.NewError(boxoffice.EUNAVAILABLE, "err_pg_unavailable")
	case err != nil:
		return fmt.Errorf("look up payment %s: %w", paymentKey, err)
	case p.OrderID != orderID || p.PaymentKey != paymentKey:
		return boxoffice.NewError(boxoffice.EUNAUTHORIZED, "err_pg_other_order")
	case p.Status != boxoffice.PaymentStatusCanceled && p.Status != boxoffice.PaymentStatusPartialCanceled:
		return nil
	}
	for _, c := range p.Cancels {
		var id string
		if rest, ok := strings.CutPrefix(c.CancelReason, ourCancelPrefix); ok {
			id, _, _ = strings.Cut(rest, ":")
		} else if strings.HasPrefix(c.CancelReason, "boxoffice: ") {
			continue // the confirmation's refund of a payment that sold nothing
		} else {
			id = "pg:" + c.TransactionKey
			recorded, err := s.recordPGCancel(ctx, id, p, c)
			if err != nil {
				return err
			}
			if !recorded {
				continue
			}
		}
		_, err := s.apply(ctx, id, p.Status)
		if code := boxoffice.ErrorCode(err); err != nil && code != boxoffice.ENOTFOUND && code != boxoffice.ECONFLICT {
			return err // ENOTFOUND, ECONFLICT: not a refund of ours, or one that failed: nothing to apply
		}
	}
	return nil
}

// recordPGCancel records a cancel made at the PG as a pending refund id of
// the order's tickets (see ApplyPGCancels), and reports false when there is
// nothing to apply: recorded before, the payment sold nothing, or no set of
// tickets adds up to the cancel's amount.
func (s *Refunds) recordPGCancel(ctx context.Context, id string, p *boxoffice.Payment, c boxoffice.PaymentCancel) (bool, error) {
	recorded := false
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var status boxoffice.OrderStatus
		err := tx.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1 FOR NO KEY UPDATE`, p.OrderID).Scan(&status)
		if err != nil {
			return notFound(err, "err_no_order")
		}
		var exists, confirmed bool
		err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM refund WHERE id = $1),
			EXISTS (SELECT 1 FROM payment WHERE payment_key = $2 AND order_id = $3 AND outcome = 'confirmed')`,
			id, p.PaymentKey, p.OrderID).Scan(&exists, &confirmed)
		if err != nil || exists || !confirmed || status != boxoffice.OrderConfirmed {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT i.seat_label, i.price FROM order_item i
			WHERE i.order_id = $1 AND NOT EXISTS (SELECT 1 FROM refund_item ri WHERE ri.order_id = i.order_id AND ri.seat_label = i.seat_label)
			ORDER BY i.seat_label`, p.OrderID)
		if err != nil {
			return fmt.Errorf("order items: %w", err)
		}
		var labels []string
		var prices []int64
		var label string
		var price int64
		if _, err := pgx.ForEachRow(rows, []any{&label, &price}, func() error {
			labels, prices = append(labels, label), append(prices, price)
			return nil
		}); err != nil {
			return fmt.Errorf("order items: %w", err)
		}
		pick := seatsAddingUpTo(prices, c.CancelAmount)
		if pick == nil {
			s.logger().Error("a refund made at the PG matches no set of the order's tickets; an admin must settle it",
				"order_id", p.OrderID, "transaction_key", c.TransactionKey, "amount", c.CancelAmount)
			return nil
		}
		seats := make([]string, len(pick))
		for i, k := range pick {
			seats[i] = labels[k]
		}
		reason := c.CancelReason
		if reason == "" {
			reason = "PG"
		}
		r := reserved{id: id, orderID: p.OrderID, paymentKey: p.PaymentKey, reason: boxoffice.ClipInput(reason, boxoffice.MaxRefundReasonLen),
			amount: c.CancelAmount, currency: p.Currency}
		if err := insertRefund(ctx, tx, r, "pg", 0, seats, s.DB.Now()); err != nil {
			return err
		}
		recorded = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("record a refund made at the PG: %w", err)
	}
	return recorded, nil
}

// seatsAddingUpTo returns the indexes of prices that add up to amount,
// preferring all of them, then the fewest seats in order; nil when none do.
// An order has at most a few dozen seats (the event's limit), and the search
// stops at 2^20 sets.
func seatsAddingUpTo(prices []int64, amount int64) []int {
	var total int64
	all := make([]int, len(prices))
	for i, p := range prices {
		total, all[i] = total+p, i
	}
	if total == amount {
		return all
	}
	if len(prices) > 20 {
		return nil
	}
	var best []int
	for set := 1; set < 1<<len(prices); set++ {
		var sum int64
		var pick []int
		for i := range prices {
			if set&(1<<i) != 0 {
				sum, pick = sum+prices[i], append(pick, i)
			}
		}
		if sum == amount && (best == nil || len(pick) < len(best)) {
			best = pick
		}
	}
	return best
}

// RetryPending asks the PG again about refunds pending for longer than
// DefaultRefundRetry (the PG did not answer, or the process stopped between
// the PG's answer and the commit), under each refund's own Idempotency-Key,
// so that the PG refunds each at most once, and applies or fails them. It
// returns how many it settled; failures are logged and tried again later.
func (s *Refunds) RetryPending(ctx context.Context) (int, error) {
	rows, err := s.DB.Pool.Query(ctx, `SELECT r.id, r.order_id, r.payment_key, r.reason, r.amount, o.currency
		FROM refund r JOIN orders o ON o.id = r.order_id
		WHERE r.status = 'pending' AND r.created_at <= $1 ORDER BY r.created_at LIMIT $2`,
		s.DB.Now().Add(-DefaultRefundRetry), reconcileBatch)
	if err != nil {
		return 0, fmt.Errorf("pending refunds: %w", err)
	}
	var pending []reserved
	var r reserved
	if _, err := pgx.ForEachRow(rows, []any{&r.id, &r.orderID, &r.paymentKey, &r.reason, &r.amount, &r.currency}, func() error {
		pending = append(pending, r)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("pending refunds: %w", err)
	}
	n := 0
	for _, r := range pending {
		var err error
		if strings.HasPrefix(r.id, "pg:") { // a cancel the PG made: only to apply, never to ask for
			err = s.ApplyPGCancels(ctx, r.paymentKey, r.orderID)
		} else {
			_, err = s.ask(ctx, r)
		}
		if err != nil {
			s.logger().Warn("retry a pending refund", "refund_id", r.id, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// RunRetry calls RetryPending every interval (DefaultRefundRetry when 0)
// until ctx ends, logging failures; it returns when ctx ends.
func (s *Refunds) RunRetry(ctx context.Context, interval time.Duration) {
	runEvery(ctx, orDefault(interval, DefaultRefundRetry), s.logger(), "retry pending refunds", func(ctx context.Context) error {
		_, err := s.RetryPending(ctx)
		return err
	})
}
