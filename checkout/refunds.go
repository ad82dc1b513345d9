package checkout

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
)

// ticketRefundReason starts the PG's cancelReason of every refund of
// tickets made here: "boxoffice refund <id>: <reason>", so that the PG's
// record of a cancel names the refund it belongs to (ApplyPGCancels).
const ticketRefundReason = "boxoffice refund "

// Refund refunds req.Seats of the confirmed order req.OrderID (all its
// tickets not refunded yet when none are named) for req.Reason, and returns
// the order's status after it, the amount refunded and the seats, once
// whoever else refunds the same order at the same time:
//
//  1. store.Refunds.Reserve records the refund pending (one transaction);
//  2. the PG is asked to cancel that part of the payment, once per refund:
//     Idempotency-Key "cancel:<paymentKey>:<id>" (boxoffice.CancelRequest's
//     RefundID), the amount with the order's currency;
//  3. store.Refunds.Apply applies it (one transaction, then Redis), or
//     store.Refunds.Fail records the PG's refusal.
//
// No lock is held across the PG call. Errors, with nothing changed:
// Reserve's (EINVALID, ENOTFOUND, ECONFLICT); ECONFLICT when the PG refused
// the refund (the refund is recorded failed, with the PG's code in the
// message); EUNAVAILABLE when the PG did not answer (the refund stays
// pending, and RetryPending finishes it).
func (s *Service) Refund(ctx context.Context, req boxoffice.RefundRequest) (*boxoffice.RefundResult, error) {
	r, err := s.Refunds.Reserve(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.ask(ctx, r)
}

// ask asks the PG for a reserved refund and applies or fails it by the answer.
func (s *Service) ask(ctx context.Context, r store.PendingRefund) (*boxoffice.RefundResult, error) {
	amount := r.Amount
	p, err := s.PG.Cancel(ctx, r.PaymentKey, boxoffice.CancelRequest{
		Reason: ticketRefundReason + r.ID + ": " + r.Reason, Amount: &amount, RefundID: r.ID,
	})
	var apiErr *boxoffice.PGError
	switch {
	case err == nil:
		return s.Refunds.Apply(context.WithoutCancel(ctx), r.ID, p.Status)
	case boxoffice.IsPGTemporary(err) || !errors.As(err, &apiErr):
		s.logger().Warn("refund: the PG did not answer; tried again later", "refund_id", r.ID, "err", err)
		return nil, boxoffice.NewError(boxoffice.EUNAVAILABLE, "refund_pg_unavailable")
	}
	s.logger().Warn("refund: the PG refused", "refund_id", r.ID, "err", err)
	if ferr := s.Refunds.Fail(context.WithoutCancel(ctx), r.ID, apiErr.Code+": "+apiErr.Message); ferr != nil {
		return nil, ferr
	}
	return nil, boxoffice.NewError(boxoffice.ECONFLICT, "refund_pg_refused", "Code", apiErr.Code)
}

// ApplyPGCancels applies, once each, the refunds the PG reports for a
// payment (a PAYMENT_STATUS_CHANGED webhook to CANCELED or PARTIAL_CANCELED;
// paymentKey and orderID come from it and are trusted for nothing else: the
// payment is looked up). Each entry of the payment's cancels is:
//
//   - one of ours ("boxoffice refund <id>: ..."): applied if still pending
//     (a refund racing its own webhook is applied once);
//   - one made elsewhere (the PG's dashboard), for an order confirmed with
//     this payment: recorded (store.Refunds.RecordPGCancel) as a refund
//     "pg:<transactionKey>" of the order's tickets whose prices add up to
//     its amount, and applied as an admin's refund would be; each cancel is
//     applied once, however often the webhook comes. A cancel no set of
//     tickets adds up to is logged for an admin and left alone.
//
// Cancels of payments that sold nothing (the confirmation's own refunds)
// change nothing. canceled reports whether the PG's record of the payment
// is CANCELED or PARTIAL_CANCELED (false: a webhook that said so was not
// the PG's word, and nothing was applied). Errors: EUNAUTHORIZED when the PG does not know the
// payment for that order; EUNAVAILABLE while the PG does not answer;
// PostgreSQL's.
func (s *Service) ApplyPGCancels(ctx context.Context, paymentKey, orderID string) (canceled bool, err error) {
	p, err := s.PG.GetPayment(ctx, paymentKey)
	switch {
	case boxoffice.IsPGCode(err, boxoffice.PGNotFoundPayment):
		return false, boxoffice.NewError(boxoffice.EUNAUTHORIZED, "err_pg_unknown_payment")
	case boxoffice.IsPGTemporary(err):
		return false, boxoffice.NewError(boxoffice.EUNAVAILABLE, "err_pg_unavailable")
	case err != nil:
		return false, fmt.Errorf("look up payment %s: %w", paymentKey, err)
	case p.OrderID != orderID || p.PaymentKey != paymentKey:
		return false, boxoffice.NewError(boxoffice.EUNAUTHORIZED, "err_pg_other_order")
	case p.Status != boxoffice.PaymentStatusCanceled && p.Status != boxoffice.PaymentStatusPartialCanceled:
		return false, nil
	}
	for _, c := range p.Cancels {
		var id string
		if rest, ok := strings.CutPrefix(c.CancelReason, ticketRefundReason); ok {
			id, _, _ = strings.Cut(rest, ":")
		} else if strings.HasPrefix(c.CancelReason, confirmationRefundReason) {
			continue // the confirmation's refund of a payment that sold nothing
		} else {
			id = "pg:" + c.TransactionKey
			recorded, err := s.Refunds.RecordPGCancel(ctx, id, p, c)
			if err != nil {
				return true, err
			}
			if !recorded {
				continue
			}
		}
		_, err := s.Refunds.Apply(ctx, id, p.Status)
		if code := boxoffice.ErrorCode(err); err != nil && code != boxoffice.ENOTFOUND && code != boxoffice.ECONFLICT {
			return true, err // ENOTFOUND, ECONFLICT: not a refund of ours, or one that failed: nothing to apply
		}
	}
	return true, nil
}

// RetryPending asks the PG again about refunds pending for longer than
// DefaultRefundRetry (the PG did not answer, or the process stopped between
// the PG's answer and the commit), under each refund's own Idempotency-Key,
// so that the PG refunds each at most once, and applies or fails them; a
// refund made at the PG is only applied (ApplyPGCancels), never asked for.
// It returns how many it settled; failures are logged and tried again later.
func (s *Service) RetryPending(ctx context.Context) (int, error) {
	pending, err := s.Refunds.Pending(ctx, DefaultRefundRetry)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range pending {
		var err error
		if r.Source == "pg" {
			_, err = s.ApplyPGCancels(ctx, r.PaymentKey, r.OrderID)
		} else {
			_, err = s.ask(ctx, r)
		}
		if err != nil {
			s.logger().Warn("retry a pending refund", "refund_id", r.ID, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// FindRefunds returns the order's refunds, oldest first
// (store.Refunds.FindRefunds).
func (s *Service) FindRefunds(ctx context.Context, orderID string) ([]boxoffice.Refund, error) {
	return s.Refunds.FindRefunds(ctx, orderID)
}
