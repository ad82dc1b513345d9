package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

// PaymentRef names a recorded payment: its key and its order.
type PaymentRef struct {
	PaymentKey, OrderID string
}

// PendingRefunds returns up to 100 payments recorded refund_pending (the
// PG did not answer or refused their cancel), oldest first, for the
// reconciler to refund again.
func (s *Orders) PendingRefunds(ctx context.Context) ([]PaymentRef, error) {
	rows, err := s.DB.Pool.Query(ctx, `SELECT payment_key, order_id FROM payment WHERE outcome = 'refund_pending'
		ORDER BY created_at LIMIT $1`, reconcileBatch)
	if err != nil {
		return nil, fmt.Errorf("pending refunds: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[PaymentRef])
	if err != nil {
		return nil, fmt.Errorf("pending refunds: %w", err)
	}
	return out, nil
}

// UnsettledOrders marks and returns the ids of up to 100 orders for the
// reconciler to ask the PG about: PENDING_PAYMENT or EXPIRED, at least
// ReconcileGrace old, expired less than ReconcileLookback ago and not
// returned in the last ReconcileRecheck, oldest first, skipping orders
// another instance is marking. Marking them is the call's one statement, so
// that instances share the work.
func (s *Orders) UnsettledOrders(ctx context.Context) ([]string, error) {
	now := s.DB.Now()
	rows, err := s.DB.Pool.Query(ctx, `
		UPDATE orders SET pg_checked_at = $1 WHERE id IN (
			SELECT id FROM orders
			WHERE status IN ('PENDING_PAYMENT', 'EXPIRED') AND created_at <= $2 AND expires_at > $3
			  AND (pg_checked_at IS NULL OR pg_checked_at <= $4)
			ORDER BY created_at LIMIT $5 FOR NO KEY UPDATE SKIP LOCKED)
		RETURNING id`,
		now, now.Add(-orDefault(s.ReconcileGrace, DefaultReconcileGrace)), now.Add(-orDefault(s.ReconcileLookback, DefaultReconcileLookback)),
		now.Add(-orDefault(s.ReconcileRecheck, DefaultReconcileRecheck)), reconcileBatch)
	if err != nil {
		return nil, fmt.Errorf("unsettled orders: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("unsettled orders: %w", err)
	}
	return ids, nil
}

// ConfirmedToRecheck marks and returns up to 100 confirmed payments for
// the reconciler to look up for cancels made at the PG (its dashboard)
// whose webhook never came: of orders CONFIRMED less than
// ReconcileCancelLookback ago (DefaultReconcileCancelLookback when 0) and
// not returned in the last ReconcileCancelRecheck
// (DefaultReconcileCancelRecheck), those never returned first, then the
// longest unreturned, skipping orders another instance is marking. Marking
// them is the call's one statement, so that instances share the work.
// Errors: PostgreSQL's.
func (s *Orders) ConfirmedToRecheck(ctx context.Context) ([]PaymentRef, error) {
	now := s.DB.Now()
	rows, err := s.DB.Pool.Query(ctx, `
		UPDATE orders o SET pg_checked_at = $1 FROM payment p
		WHERE p.order_id = o.id AND p.outcome = 'confirmed' AND o.id IN (
			SELECT id FROM orders
			WHERE status = 'CONFIRMED' AND confirmed_at > $2 AND (pg_checked_at IS NULL OR pg_checked_at <= $3)
			ORDER BY pg_checked_at NULLS FIRST, confirmed_at LIMIT $4 FOR NO KEY UPDATE SKIP LOCKED)
		RETURNING p.payment_key, o.id`,
		now, now.Add(-orDefault(s.ReconcileCancelLookback, DefaultReconcileCancelLookback)),
		now.Add(-orDefault(s.ReconcileCancelRecheck, DefaultReconcileCancelRecheck)), reconcileBatch)
	if err != nil {
		return nil, fmt.Errorf("confirmed orders to recheck: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[PaymentRef])
	if err != nil {
		return nil, fmt.Errorf("confirmed orders to recheck: %w", err)
	}
	return out, nil
}

// Defaults of the reconciler's look-ups of confirmed orders.
const (
	// DefaultReconcileCancelLookback is how long after its confirmation an
	// order's payment is looked up for cancels made at the PG.
	DefaultReconcileCancelLookback = 7 * 24 * time.Hour
	// DefaultReconcileCancelRecheck is how long the reconciler waits before
	// it looks up the same confirmed order again.
	DefaultReconcileCancelRecheck = time.Hour
)

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Default intervals of the background workers.
const (
	DefaultExpiryInterval    = time.Second
	DefaultReconcileInterval = 30 * time.Second // the reconciler's (package checkout)
	DefaultRelayInterval     = 500 * time.Millisecond
)

// RunExpiry calls ExpireOrders every interval (DefaultExpiryInterval when
// 0) until ctx ends, logging failures; it returns when ctx ends.
func (s *Orders) RunExpiry(ctx context.Context, interval time.Duration) {
	RunEvery(ctx, orDefault(interval, DefaultExpiryInterval), s.logger(), "expire orders", func(ctx context.Context) error {
		_, err := s.ExpireOrders(ctx)
		return err
	})
}

// RunEvery runs fn at once and then every interval until ctx ends, logging
// its errors (with their code) as "what" unless ctx ended; the background
// workers run on it.
func RunEvery(ctx context.Context, interval time.Duration, logger *slog.Logger, what string, fn func(context.Context) error) {
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
