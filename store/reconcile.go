package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

// ReconcileResult counts what one Reconcile did.
type ReconcileResult struct {
	Refunds  int // refund_pending payments tried again
	Checked  int // orders the PG was asked about
	Found    int // of those, orders the PG has a payment for (then passed to Confirm)
	Failures int // refunds, look-ups or confirmations that failed (logged; tried again later)
}

// Reconcile finishes what the redirect and the webhook left undone, through
// the same routine (Confirm):
//
//   - every payment still refund_pending (the PG did not answer the refund)
//     is refunded again, up to 100 per call;
//   - orders PENDING_PAYMENT or EXPIRED that are at least ReconcileGrace old,
//     expired less than ReconcileLookback ago and were not asked about in the
//     last ReconcileRecheck are looked up at the PG (GetPaymentByOrderID; up
//     to 100 per call, oldest first, skipping orders another instance is
//     marking): a payment found, such as one confirmed at the PG whose commit
//     was lost in a crash, or one the buyer authenticated but whose redirect
//     never came, is confirmed or refunded like any other.
//
// Failures of single payments are logged and counted, not returned: the next
// call tries again. Errors: PostgreSQL failures of the look-ups.
func (s *Orders) Reconcile(ctx context.Context) (ReconcileResult, error) {
	var res ReconcileResult
	rows, err := s.DB.Pool.Query(ctx, `SELECT payment_key, order_id FROM payment WHERE outcome = 'refund_pending'
		ORDER BY created_at LIMIT $1`, reconcileBatch)
	if err != nil {
		return res, fmt.Errorf("reconcile: pending refunds: %w", err)
	}
	var refunds [][2]string
	var key, orderID string
	if _, err := pgx.ForEachRow(rows, []any{&key, &orderID}, func() error {
		refunds = append(refunds, [2]string{key, orderID})
		return nil
	}); err != nil {
		return res, fmt.Errorf("reconcile: pending refunds: %w", err)
	}
	for _, r := range refunds {
		res.Refunds++
		if _, err := s.Confirm(ctx, r[1], r[0], nil); err != nil {
			res.Failures++
			s.logger().Warn("reconcile: refund", "payment_key", r[0], "order_id", r[1], "err", err)
		}
	}

	now := s.DB.Now()
	rows, err = s.DB.Pool.Query(ctx, `
		UPDATE orders SET pg_checked_at = $1 WHERE id IN (
			SELECT id FROM orders
			WHERE status IN ('PENDING_PAYMENT', 'EXPIRED') AND created_at <= $2 AND expires_at > $3
			  AND (pg_checked_at IS NULL OR pg_checked_at <= $4)
			ORDER BY created_at LIMIT $5 FOR NO KEY UPDATE SKIP LOCKED)
		RETURNING id`,
		now, now.Add(-orDefault(s.ReconcileGrace, DefaultReconcileGrace)), now.Add(-orDefault(s.ReconcileLookback, DefaultReconcileLookback)),
		now.Add(-orDefault(s.ReconcileRecheck, DefaultReconcileRecheck)), reconcileBatch)
	if err != nil {
		return res, fmt.Errorf("reconcile: orders: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return res, fmt.Errorf("reconcile: orders: %w", err)
	}
	for _, id := range ids {
		res.Checked++
		p, err := s.PG.GetPaymentByOrderID(ctx, id)
		if boxoffice.IsPGCode(err, boxoffice.PGNotFoundPayment) {
			continue // the buyer never authenticated a payment
		} else if err != nil {
			res.Failures++
			s.logger().Warn("reconcile: look up the payment of an order", "order_id", id, "err", err)
			continue
		}
		res.Found++
		c, err := s.Confirm(ctx, id, p.PaymentKey, nil)
		if err != nil {
			res.Failures++
			s.logger().Warn("reconcile: confirm", "order_id", id, "payment_key", p.PaymentKey, "err", err)
			continue
		}
		s.logger().Info("reconcile: settled a payment", "order_id", id, "payment_key", p.PaymentKey,
			"outcome", c.Outcome, "order_status", c.Order.Status)
	}
	return res, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Default intervals of the background workers.
const (
	DefaultExpiryInterval    = time.Second
	DefaultReconcileInterval = 30 * time.Second
	DefaultRelayInterval     = 500 * time.Millisecond
)

// RunExpiry calls ExpireOrders every interval (DefaultExpiryInterval when
// 0) until ctx ends, logging failures; it returns when ctx ends.
func (s *Orders) RunExpiry(ctx context.Context, interval time.Duration) {
	runEvery(ctx, orDefault(interval, DefaultExpiryInterval), s.logger(), "expire orders", func(ctx context.Context) error {
		_, err := s.ExpireOrders(ctx)
		return err
	})
}

// RunReconciler calls Reconcile every interval (DefaultReconcileInterval when
// 0) until ctx ends, logging failures; it returns when ctx ends.
func (s *Orders) RunReconciler(ctx context.Context, interval time.Duration) {
	runEvery(ctx, orDefault(interval, DefaultReconcileInterval), s.logger(), "reconcile payments", func(ctx context.Context) error {
		_, err := s.Reconcile(ctx)
		return err
	})
}

// runEvery runs fn at once and then every interval until ctx ends.
func runEvery(ctx context.Context, interval time.Duration, logger *slog.Logger, what string, fn func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			logger.Error(what, "err", err, "code", boxoffice.ErrorCode(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
