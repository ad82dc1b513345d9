package checkout

import (
	"context"
	"fmt"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
)

// errPGUnavailable is the answer while the PG does not answer (or answers
// that it cannot say yet): the caller retries later, and meanwhile the
// reconciler does.
var errPGUnavailable = boxoffice.NewError(boxoffice.EUNAVAILABLE, "err_pg_unavailable_settle")

// errPGRefused is the PG's final refusal of a look-up that should work (such
// as INVALID_API_KEY or UNAUTHORIZED_KEY: a misconfigured deployment): the
// buyer reads that the order waits, never a 500 page, the operator the PG's
// answer in the log, and the webhook and the reconciler try again.
var errPGRefused = boxoffice.NewError(boxoffice.EUNAVAILABLE, "err_pg_refused")

// confirmationRefundReason starts the PG's cancelReason of a payment refunded
// because it sold nothing ("boxoffice: seat_taken"), so that ApplyPGCancels
// tells these cancels from refunds of tickets.
const confirmationRefundReason = "boxoffice: "

// Confirm is the one confirmation routine: the PG's success redirect, its
// webhook (ConfirmWebhook) and the reconciler (Reconcile) all call it, any
// number of times and concurrently, and one payment is counted once. Each
// step asks the PG, if at all, before the store's transaction:
//
//  1. redirect (the success redirect's amount, in minor units of the
//     order's currency since the redirect names none; nil for the others)
//     is compared with the order's own amount before anything else: if it
//     differs, the payment is looked up (which moves no money), and if the
//     PG knows it for this order, the order becomes FAILED (amount_mismatch)
//     unless it is past that (store.Orders.FailTampered), and Outcome is "":
//     the payment was never confirmed, so its authorisation lapses and
//     nothing is charged.
//  2. A payment already recorded returns its recorded result, read with
//     the order in one round trip (a pending refund is tried again first),
//     except a rejected one, which is looked
//     up again: if the PG has confirmed it since (another caller's confirm
//     was under way), it is refunded.
//  3. The PG is asked: a payable order's payment is confirmed (Toss's
//     confirm with the order's own amount and currency; its Idempotency-Key
//     makes repeats harmless), then the payment is looked up and only that
//     answer counts, never an amount from the browser or a webhook body.
//  4. A payment the PG reports DONE for exactly the order's amount in the
//     order's currency goes through one transaction
//     (store.Orders.ConfirmPayment): it is confirmed, or recorded
//     refund_pending and then cancelled at the PG (refunded) when the seats
//     were taken, the account's limit would be passed, the order was paid by
//     another payment or had failed. One DONE for another amount or currency
//     fails the order (amount_mismatch) and is refunded. A payment that was
//     never confirmed is recorded rejected (its amount or currency differs:
//     the order fails; the card was refused: the order stays payable).
//
// Errors (nothing changed): ENOTFOUND for an unknown order; EBADREQUEST for a
// malformed or unknown payment key, or a payment of another order;
// EUNAVAILABLE while the PG does not answer or cannot tell yet, or refuses
// our key; others when PostgreSQL or Redis fail. A committed outcome is
// never an error: a refund the PG has not confirmed yet is Outcome
// refund_pending.
//
// Calls for one order and payment on one Service wait for the first under way
// and take its result when it settled the payment (confirmed or refunded; for a
// redirect, an order of the redirect's amount): the recorded result a call made
// after it would read, with no round trip to PostgreSQL, no claim in Redis and
// no call to the PG (the PG's webhook comes while the redirect's confirmation is
// under way: docs/performance.md, "The store's work per paid order"); they share
// that *Confirmation, which no caller changes. After any other result, or an
// error, each waiting call confirms on its own. Calls on other instances do not
// wait; the store's transaction decides between them.
func (s *Service) Confirm(ctx context.Context, orderID, paymentKey string, redirect *int64) (*boxoffice.Confirmation, error) {
	if !boxoffice.ValidPaymentKey(paymentKey) {
		return nil, boxoffice.NewError(boxoffice.EBADREQUEST, "err_payment_key")
	}
	return s.confirmOnce(ctx, orderID, paymentKey, redirect, false)
}

// confirmOnce is Confirm after its argument checks: a call for one order
// and payment waits for the one under way on this Service, and takes its
// settled result, or confirms (confirm). webhook says the call is a
// webhook's (ConfirmWebhook).
func (s *Service) confirmOnce(ctx context.Context, orderID, paymentKey string, redirect *int64, webhook bool) (*boxoffice.Confirmation, error) {
	call, first := s.startConfirm(orderID, paymentKey)
	if !first {
		if s.joining != nil {
			s.joining(orderID, paymentKey)
		}
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c := call.result; c != nil && settled(c, redirect) {
			return c, nil
		}
		return s.confirm(ctx, orderID, paymentKey, redirect, webhook)
	}
	var c *boxoffice.Confirmation
	defer func() { s.endConfirm(orderID, paymentKey, call, c) }()
	c, err := s.confirm(ctx, orderID, paymentKey, redirect, webhook)
	if err != nil {
		c = nil
	}
	return c, err
}

// confirmCall is a Confirm under way for one order and payment, which later
// calls for them wait for (Service.Confirm).
type confirmCall struct {
	done   chan struct{}
	result *boxoffice.Confirmation // nil if the call failed; set before done closes
}

// startConfirm returns the call under way for the order and payment and
// false, or registers a new one and returns it and true: the caller runs it
// and ends it with endConfirm.
func (s *Service) startConfirm(orderID, paymentKey string) (*confirmCall, bool) {
	key := orderID + "\x00" + paymentKey
	s.mu.Lock()
	defer s.mu.Unlock()
	if call := s.calls[key]; call != nil {
		return call, false
	}
	if s.calls == nil {
		s.calls = map[string]*confirmCall{}
	}
	call := &confirmCall{done: make(chan struct{})}
	s.calls[key] = call
	return call, true
}

// endConfirm hands the call's result to the calls waiting for it and
// unregisters it.
func (s *Service) endConfirm(orderID, paymentKey string, call *confirmCall, result *boxoffice.Confirmation) {
	s.mu.Lock()
	delete(s.calls, orderID+"\x00"+paymentKey)
	s.mu.Unlock()
	call.result = result
	close(call.done)
}

// settled reports whether c, another call's result for the same order and
// payment, is one a call with redirect would return: a payment recorded
// confirmed or refunded (one rejected is looked up again, one
// refund_pending refunded again), for an order of the redirect's amount.
func settled(c *boxoffice.Confirmation, redirect *int64) bool {
	if c.Outcome != boxoffice.PaymentConfirmed && c.Outcome != boxoffice.PaymentRefunded {
		return false
	}
	return redirect == nil || *redirect == c.Order.Amount.Amount
}

// confirm is Confirm's work for one call. A webhook's call (webhook true)
// returns a payment recorded confirmed or refunded for the order as it is,
// and otherwise looks the payment up at the PG (verifyWebhook) before
// anything else.
func (s *Service) confirm(ctx context.Context, orderID, paymentKey string, redirect *int64, webhook bool) (*boxoffice.Confirmation, error) {
	o, rec, err := s.Orders.OrderAndPayment(ctx, orderID, paymentKey)
	if webhook {
		if err == nil && rec != nil && rec.OrderID == o.ID && (rec.Outcome == boxoffice.PaymentConfirmed || rec.Outcome == boxoffice.PaymentRefunded) {
			return store.Confirmation(o, paymentKey, rec), nil
		}
		if verr := s.verifyWebhook(ctx, orderID, paymentKey); verr != nil {
			return nil, verr
		}
	}
	if err != nil {
		return nil, err
	}
	if redirect != nil && *redirect != o.Amount.Amount {
		return s.failTampered(ctx, o, paymentKey, boxoffice.Money{Amount: *redirect, Currency: o.Amount.Currency})
	}
	switch {
	case rec != nil && rec.OrderID != o.ID:
		return nil, boxoffice.NewError(boxoffice.EBADREQUEST, "err_payment_other_order")
	case rec != nil && rec.Outcome != boxoffice.PaymentRejected:
		// Recorded: its result, read with the order. A rejected payment is
		// looked up again, since a confirm under way when it was rejected
		// may have moved its money since.
		return s.settle(ctx, store.Confirmation(o, paymentKey, rec))
	}
	p, confirmErr, err := s.askPG(ctx, o, paymentKey)
	if err != nil {
		return nil, err
	}
	var c *boxoffice.Confirmation
	switch p.Status {
	case boxoffice.PaymentStatusDone:
		if p.Total() != o.Amount {
			c, err = s.Orders.RecordUnsold(ctx, o, p, boxoffice.ReasonAmountMismatch,
				fmt.Sprintf("the PG reports %s, the order is %s", p.Total(), o.Amount))
		} else {
			c, err = s.Orders.ConfirmPayment(ctx, o, p)
		}
		if err != nil {
			return nil, err
		}
		return s.settle(ctx, c)
	case boxoffice.PaymentStatusCanceled, boxoffice.PaymentStatusPartialCanceled:
		return s.Orders.RecordUnconfirmed(ctx, o, p, boxoffice.PaymentRefunded, "", "", false) // refunded by others
	case boxoffice.PaymentStatusAborted, boxoffice.PaymentStatusExpired:
		detail := string(p.Status)
		if p.Failure != nil {
			detail = p.Failure.Code + ": " + p.Failure.Message
		}
		s.logger().Warn("the PG refused a payment", "order_id", o.ID, "payment_key", paymentKey, "failure", detail, "confirm", confirmErr)
		return s.Orders.RecordUnconfirmed(ctx, o, p, boxoffice.PaymentRejected, boxoffice.ReasonPaymentFailed, detail, false)
	case boxoffice.PaymentStatusWaitingForDeposit:
		return s.Orders.Result(ctx, o.ID, paymentKey) // not paid yet: nothing to record
	}
	// READY or IN_PROGRESS: authenticated, never confirmed.
	switch {
	case p.Total() != o.Amount:
		return s.Orders.RecordUnconfirmed(ctx, o, p, boxoffice.PaymentRejected, boxoffice.ReasonAmountMismatch,
			fmt.Sprintf("the payment is for %s, the order is %s", p.Total(), o.Amount), true)
	case o.Status == boxoffice.OrderConfirmed:
		return s.Orders.RecordUnconfirmed(ctx, o, p, boxoffice.PaymentRejected, boxoffice.ReasonAlreadyPaid, "", false)
	case !o.Status.CanBecome(boxoffice.OrderConfirmed):
		return s.Orders.RecordUnconfirmed(ctx, o, p, boxoffice.PaymentRejected, boxoffice.ClosedReason(o.FailureCode), string(o.Status), false)
	case confirmErr == nil || boxoffice.IsPGTemporary(confirmErr):
		return nil, fmt.Errorf("%w (confirm: %v)", errPGUnavailable, confirmErr)
	}
	s.logger().Warn("the PG refused to confirm a payment", "order_id", o.ID, "payment_key", paymentKey, "err", confirmErr)
	return s.Orders.RecordUnconfirmed(ctx, o, p, boxoffice.PaymentRejected, boxoffice.ReasonPaymentFailed, confirmErr.Error(), false)
}

// ConfirmWebhook handles a PAYMENT_STATUS_CHANGED webhook that names
// paymentKey and orderID. Webhooks carry no signature, so it trusts nothing
// of the body but the two names: it confirms as Confirm does (without a
// redirect amount), and before it acts on the payment it looks it up at the
// PG with the secret key (verifyWebhook). A payment already settled for
// the order needs no look-up, since nothing is done: the result recorded
// confirmed or refunded, or the settled result of the confirmation under
// way for the same order and payment on this Service (the success
// redirect's, which the PG's webhook races: that call confirmed and looked
// the payment up itself) is answered as it is, as Confirm answers a repeat.
//
// Errors: EUNAUTHORIZED when the PG does not know the payment or it belongs
// to another order (a forged or mistaken webhook); EUNAVAILABLE while the PG
// does not answer; and Confirm's (ENOTFOUND: not one of our orders).
func (s *Service) ConfirmWebhook(ctx context.Context, paymentKey, orderID string) (*boxoffice.Confirmation, error) {
	if !boxoffice.ValidPaymentKey(paymentKey) {
		return nil, boxoffice.NewError(boxoffice.EBADREQUEST, "err_payment_key")
	}
	return s.confirmOnce(ctx, orderID, paymentKey, nil, true)
}

// verifyWebhook looks a webhook's payment up at the PG (GET
// /v1/payments/{paymentKey}, with the secret key): nil if the PG knows it
// as orderID's. Errors as ConfirmWebhook's.
func (s *Service) verifyWebhook(ctx context.Context, orderID, paymentKey string) error {
	p, err := s.PG.GetPayment(ctx, paymentKey)
	switch {
	case boxoffice.IsPGCode(err, boxoffice.PGNotFoundPayment):
		return boxoffice.NewError(boxoffice.EUNAUTHORIZED, "err_pg_unknown_payment")
	case boxoffice.IsPGTemporary(err):
		return fmt.Errorf("%w (look up: %v)", errPGUnavailable, err)
	case err != nil:
		return fmt.Errorf("%w (look up payment %s: %v)", errPGRefused, paymentKey, err)
	case p.OrderID != orderID || p.PaymentKey != paymentKey:
		return boxoffice.NewError(boxoffice.EUNAUTHORIZED, "err_pg_other_order")
	}
	return nil
}

// failTampered fails the order because the redirect said another amount
// (see Confirm, step 1), after looking the payment up (GET
// /v1/payments/{paymentKey}, which moves no money): a redirect whose payment
// the PG does not know for this order is anyone's forgery and changes
// nothing (EBADREQUEST; EUNAVAILABLE while the PG does not answer).
func (s *Service) failTampered(ctx context.Context, o *boxoffice.Order, paymentKey string, redirect boxoffice.Money) (*boxoffice.Confirmation, error) {
	p, err := s.PG.GetPayment(ctx, paymentKey)
	switch {
	case err != nil && boxoffice.IsPGTemporary(err):
		return nil, boxoffice.NewError(boxoffice.EUNAVAILABLE, "err_pg_unavailable")
	case err != nil || p.OrderID != o.ID:
		return nil, boxoffice.NewError(boxoffice.EBADREQUEST, "err_payment_other_order")
	}
	return s.Orders.FailTampered(ctx, o.ID, fmt.Sprintf("the redirect says %s, the order is %s", redirect, o.Amount))
}

// askPG confirms the payment at the PG if the order may still be paid, then
// looks it up. It returns the PG's payment and the confirm's error (nil if
// it succeeded or was not tried). Errors: EBADREQUEST (unknown payment, or
// another order's); EUNAVAILABLE (the PG does not answer, or refuses our
// key: logged).
func (s *Service) askPG(ctx context.Context, o *boxoffice.Order, paymentKey string) (*boxoffice.Payment, error, error) {
	var confirmErr error
	if o.Status.CanBecome(boxoffice.OrderConfirmed) {
		// The answer may be a replay (the Idempotency-Key), stale or an
		// error: the look-up below decides.
		_, confirmErr = s.PG.Confirm(ctx, paymentKey, o.ID, o.Amount)
	}
	p, err := s.PG.GetPayment(ctx, paymentKey)
	switch {
	case boxoffice.IsPGCode(err, boxoffice.PGNotFoundPayment):
		return nil, nil, boxoffice.NewError(boxoffice.EBADREQUEST, "err_no_payment")
	case boxoffice.IsPGTemporary(err):
		return nil, nil, fmt.Errorf("%w (look up: %v)", errPGUnavailable, err)
	case err != nil:
		return nil, nil, fmt.Errorf("%w (look up payment %s: %v)", errPGRefused, paymentKey, err)
	case p.OrderID != o.ID || p.PaymentKey != paymentKey:
		return nil, nil, boxoffice.NewError(boxoffice.EBADREQUEST, "err_payment_other_order")
	}
	return p, confirmErr, nil
}

// settle returns a recorded result, after cancelling its payment at the PG
// if it is still refund_pending.
func (s *Service) settle(ctx context.Context, c *boxoffice.Confirmation) (*boxoffice.Confirmation, error) {
	if c.Outcome != boxoffice.PaymentRefundPending {
		return c, nil
	}
	if err := s.refundPayment(ctx, c.PaymentKey, c.Reason); err != nil {
		return nil, err
	}
	return s.Orders.Result(ctx, c.Order.ID, c.PaymentKey)
}

// refundPayment cancels a refund_pending payment at the PG (Idempotency-Key
// cancel:<paymentKey>: repeats refund once) and records it refunded. While
// the PG does not answer, or refuses, the payment stays refund_pending, for
// Reconcile to try again and FindStuckOrders to show; that is not an error.
func (s *Service) refundPayment(ctx context.Context, paymentKey, reason string) error {
	_, err := s.PG.Cancel(ctx, paymentKey, boxoffice.CancelRequest{Reason: confirmationRefundReason + reason})
	if err != nil && !boxoffice.IsPGCode(err, boxoffice.PGAlreadyCanceledPayment) {
		if boxoffice.IsPGTemporary(err) {
			s.logger().Warn("refund: the PG did not answer; the reconciler tries again", "payment_key", paymentKey, "err", err)
			return nil
		}
		p, gerr := s.PG.GetPayment(ctx, paymentKey)
		if gerr != nil || (p.Status != boxoffice.PaymentStatusCanceled && p.Status != boxoffice.PaymentStatusPartialCanceled) {
			s.logger().Error("refund refused by the PG; the payment stays refund_pending", "payment_key", paymentKey, "err", err)
			return nil
		}
	}
	return s.Orders.RecordRefunded(ctx, paymentKey)
}
