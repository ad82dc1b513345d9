package checkout

import (
	"context"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
)

// ReconcileResult counts what one Reconcile did.
type ReconcileResult struct {
	Refunds  int // refund_pending payments tried again
	Checked  int // orders the PG was asked about
	Found    int // of those, orders the PG has a payment for (then passed to Confirm)
	Failures int // refunds, look-ups, confirmations or cancels that failed (logged; tried again later)
	// ConfirmedChecked counts confirmed orders whose payment the PG was
	// asked about, Canceled those it reported CANCELED or PARTIAL_CANCELED
	// (then passed to ApplyPGCancels).
	ConfirmedChecked, Canceled int
}

// Reconcile finishes what the redirect and the webhook left undone, through
// the same routine (Confirm):
//
//   - every payment still refund_pending (the PG did not answer the refund)
//     is refunded again, up to 100 per call (store.Orders.PendingRefunds);
//   - the orders store.Orders.UnsettledOrders returns (PENDING_PAYMENT or
//     EXPIRED, old enough, not asked about lately; up to 100 per call) are
//     looked up at the PG (GetPaymentByOrderID): a payment found, such as
//     one confirmed at the PG whose commit was lost in a crash, or one the
//     buyer authenticated but whose redirect never came, is confirmed or
//     refunded like any other;
//   - the confirmed payments store.Orders.ConfirmedToRecheck returns
//     (confirmed in the last 7 days, each looked up at most hourly; up to
//     100 per call) are looked up (GetPayment): a payment the PG reports
//     CANCELED or PARTIAL_CANCELED (a refund made at its dashboard whose
//     webhook was lost) goes through ApplyPGCancels, as the webhook would,
//     which applies each cancel once however often and however concurrently
//     it is reported. At the defaults (every 30 s) that is up to 12,000
//     look-ups an hour: a sale of up to 12,000 orders has each looked up
//     hourly.
//
// Failures of single payments are logged and counted, not returned: the next
// call tries again. Errors: PostgreSQL failures of the look-ups.
func (s *Service) Reconcile(ctx context.Context) (ReconcileResult, error) {
	var res ReconcileResult
	refunds, err := s.Orders.PendingRefunds(ctx)
	if err != nil {
		return res, err
	}
	for _, r := range refunds {
		res.Refunds++
		if _, err := s.Confirm(ctx, r.OrderID, r.PaymentKey, nil); err != nil {
			res.Failures++
			s.logger().Warn("reconcile: refund", "payment_key", r.PaymentKey, "order_id", r.OrderID, "err", err)
		}
	}
	ids, err := s.Orders.UnsettledOrders(ctx)
	if err != nil {
		return res, err
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
	confirmed, err := s.Orders.ConfirmedToRecheck(ctx)
	if err != nil {
		return res, err
	}
	for _, r := range confirmed {
		res.ConfirmedChecked++
		p, err := s.PG.GetPayment(ctx, r.PaymentKey)
		if err != nil {
			res.Failures++
			s.logger().Warn("reconcile: look up a confirmed payment", "order_id", r.OrderID, "payment_key", r.PaymentKey, "err", err)
			continue
		}
		if p.Status != boxoffice.PaymentStatusCanceled && p.Status != boxoffice.PaymentStatusPartialCanceled {
			continue
		}
		res.Canceled++
		if _, err := s.ApplyPGCancels(ctx, r.PaymentKey, r.OrderID); err != nil {
			res.Failures++
			s.logger().Warn("reconcile: apply the PG's cancels", "order_id", r.OrderID, "payment_key", r.PaymentKey, "err", err)
		}
	}
	return res, nil
}

// RunReconciler calls Reconcile every interval (DefaultReconcileInterval when
// 0) until ctx ends, logging failures; it returns when ctx ends.
func (s *Service) RunReconciler(ctx context.Context, interval time.Duration) {
	store.RunEvery(ctx, orDefault(interval, DefaultReconcileInterval), s.logger(), "reconcile payments", func(ctx context.Context) error {
		_, err := s.Reconcile(ctx)
		return err
	})
}

// RunRetry calls RetryPending every interval (DefaultRefundRetry when 0)
// until ctx ends, logging failures; it returns when ctx ends.
func (s *Service) RunRetry(ctx context.Context, interval time.Duration) {
	store.RunEvery(ctx, orDefault(interval, DefaultRefundRetry), s.logger(), "retry pending refunds", func(ctx context.Context) error {
		_, err := s.RetryPending(ctx)
		return err
	})
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
