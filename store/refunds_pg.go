package store

import (
	"context"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

// RecordPGCancel records c, a cancel of the PG's payment p made at the PG
// (its dashboard, say), as the pending refund id (Source "pg") of the
// order's tickets not refunded yet whose prices add up to its amount (all
// of them for the whole balance; else the fewest seats), for Apply. It
// reports false when there is nothing to apply: recorded before (the
// refund's PRIMARY KEY records each cancel once), the payment did not
// confirm the order, or no set of tickets adds up to the cancel's amount
// (logged for an admin). Errors: ENOTFOUND (not our order); PostgreSQL's.
func (s *Refunds) RecordPGCancel(ctx context.Context, id string, p *boxoffice.Payment, c boxoffice.PaymentCancel) (bool, error) {
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
		r := PendingRefund{ID: id, OrderID: p.OrderID, PaymentKey: p.PaymentKey, Reason: boxoffice.ClipInput(reason, boxoffice.MaxRefundReasonLen),
			Source: "pg", Amount: boxoffice.Money{Amount: c.CancelAmount, Currency: p.Currency}}
		if err := insertRefund(ctx, tx, r, 0, seats, s.DB.Now()); err != nil {
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

// Pending returns up to 100 refunds pending for at least age (the PG did
// not answer, or the process stopped between the PG's answer and the
// commit), oldest first.
func (s *Refunds) Pending(ctx context.Context, age time.Duration) ([]PendingRefund, error) {
	rows, err := s.DB.Pool.Query(ctx, `SELECT r.id, r.order_id, r.payment_key, r.reason, r.source, r.amount, o.currency
		FROM refund r JOIN orders o ON o.id = r.order_id
		WHERE r.status = 'pending' AND r.created_at <= $1 ORDER BY r.created_at LIMIT $2`,
		s.DB.Now().Add(-age), reconcileBatch)
	if err != nil {
		return nil, fmt.Errorf("pending refunds: %w", err)
	}
	var pending []PendingRefund
	var r PendingRefund
	if _, err := pgx.ForEachRow(rows, []any{&r.ID, &r.OrderID, &r.PaymentKey, &r.Reason, &r.Source, &r.Amount.Amount, &r.Amount.Currency}, func() error {
		pending = append(pending, r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("pending refunds: %w", err)
	}
	return pending, nil
}
