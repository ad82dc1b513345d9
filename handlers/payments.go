package handlers

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// errBadPaymentLink refuses a PG redirect whose parameters the PG would not
// send: missing, malformed or too long. Nothing is looked up.
var errBadPaymentLink = boxoffice.NewError(boxoffice.EBADREQUEST, "err_payment_link")

// maxFailMessageLen bounds the fail redirect's message, in characters. It
// is never shown (anyone can write it into a link), but is read.
const maxFailMessageLen = 1000

// failCodePattern is the shape of the PG's error codes (PAY_PROCESS_CANCELED).
var failCodePattern = regexp.MustCompile(`^[A-Za-z0-9_]{1,100}$`)

// handleCheckout handles GET /payments/checkout?orderId, the checkout with
// PG_PROVIDER=toss: to the order's owner while it is payable, the page that
// opens Toss's payment window (views.TossCheckoutPage); a 303 to the order
// page once it is not. Errors: 404 for an order that is not the account's,
// and on a deployment without PG_CLIENT_KEY (the sandbox has its own page).
func (s *Server) handleCheckout(c echo.Context) error {
	if s.PGClientKey == "" {
		return echo.ErrNotFound
	}
	o, err := s.ownOrderByID(c.Request().Context(), c.QueryParam("orderId"))
	if err != nil {
		return err
	}
	if !o.Payable(s.Now()) {
		return c.Redirect(http.StatusSeeOther, "/orders/"+url.PathEscape(o.ID))
	}
	a := boxoffice.AccountFromContext(c.Request().Context())
	return render(c, http.StatusOK, views.TossCheckoutPage(views.TossCheckout{
		Order: o, Request: s.Checkout.CheckoutRequest(o), ClientKey: s.PGClientKey,
		CustomerKey: boxoffice.CustomerKey(s.CustomerKeySecret, a.ID), CustomerEmail: a.Email, CustomerName: a.Name,
	}))
}

// handlePaymentSuccess handles GET /payments/success?paymentKey&orderId&amount,
// the PG's redirect after the buyer authenticated: it confirms the payment
// (the order's own amount is compared with the redirect's first) and answers
// 303 to the order page, which shows the outcome. While the PG does not
// answer, or refuses our key (a PG error the buyer cannot fix), the order
// page says so (?pg=unavailable or ?pg=refused), the operator reads the PG's
// answer in the log, and the page follows the order until the webhook or
// the reconciler settles it. The confirmation is the same whoever follows
// the redirect (another account's browser included); only the order's
// owner then sees the order: JSON {"order_id", "status", "outcome"} to the
// owner, 404 to anyone else. Errors: 400 for a malformed redirect (a
// paymentKey of 1 to 200 bytes, an orderId as Toss's, a positive whole
// amount) or another order's payment; 404 for an unknown order.
func (s *Server) handlePaymentSuccess(c echo.Context) error {
	q := c.Request().URL.Query()
	orderID, paymentKey := q.Get("orderId"), q.Get("paymentKey")
	amount, err := strconv.ParseInt(q.Get("amount"), 10, 64)
	if err != nil || amount <= 0 || !boxoffice.ValidOrderID(orderID) || !boxoffice.ValidPaymentKey(paymentKey) {
		return errBadPaymentLink
	}
	ctx := c.Request().Context()
	conf, err := s.Checkout.Confirm(ctx, orderID, paymentKey, &amount)
	wait := ""
	if boxoffice.ErrorCode(err) == boxoffice.EUNAVAILABLE {
		s.Logger.Warn("payment redirect: not settled yet", "order_id", orderID, "payment_key", paymentKey, "err", err)
		wait = views.PGWaitUnavailable
		if boxoffice.ErrorMsg(err).ID == "err_pg_refused" {
			wait = views.PGWaitRefused
		}
	} else if err != nil {
		return err
	}
	if wantsJSON(c) {
		if a := boxoffice.AccountFromContext(ctx); a == nil || conf != nil && conf.Order.AccountID != a.ID {
			return errNoOrder
		}
		if conf == nil {
			return err
		}
		return answerJSON(c, http.StatusOK, map[string]any{"order_id": orderID, "status": conf.Order.Status, "outcome": conf.Outcome})
	}
	to := "/orders/" + url.PathEscape(orderID)
	if wait != "" {
		to += "?pg=" + wait
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// handlePaymentFail handles GET /payments/fail?code&message&orderId, the PG's
// redirect when the buyer gave up or the authentication failed: the order
// page, saying why (by the code; the message is not shown, as anyone can
// write it into a link). Nothing changes: the order stays payable until it
// expires. Errors: 400 for a code that is not 1 to 100 letters, digits or
// underscores, or a message over maxFailMessageLen characters; 404 for an
// order that is not the account's.
func (s *Server) handlePaymentFail(c echo.Context) error {
	q := c.Request().URL.Query()
	code := q.Get("code")
	if (code != "" && !failCodePattern.MatchString(code)) || utf8.RuneCountInString(q.Get("message")) > maxFailMessageLen {
		return errBadPaymentLink
	}
	o, err := s.ownOrderByID(c.Request().Context(), q.Get("orderId"))
	if err != nil {
		return err
	}
	if code == "" {
		code = "UNKNOWN"
	}
	return s.renderOrder(c, views.OrderView{Order: o, FailCode: code})
}

// handleWebhook handles POST /payments/webhook, the PG's
// PAYMENT_STATUS_CHANGED webhook. The body only names the payment: it is
// looked up at the PG with the secret key and confirmed from that answer
// (CheckoutService.ConfirmWebhook). Answers: 200 {"order_id", "status",
// "outcome"} once handled, repeats included (and {"ignored": true} for a
// payment of an order that is not ours, which no retry can change); for a
// payment the PG reports CANCELED or PARTIAL_CANCELED, its refunds are
// applied once each (RefundService.ApplyPGCancels) and the outcome is
// "refunded" (a webhook that says CANCELED of a payment the PG's record
// does not is answered with the outcome recorded, like any other); 400 or
// 413 for a body that is not a payment event; 401 when the PG does not know
// the payment; 5xx while PostgreSQL or the PG do not answer, so that the PG
// retries.
func (s *Server) handleWebhook(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, toss.MaxWebhookBytes+1))
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return err // the body limit: 413
	} else if err != nil {
		return boxoffice.NewError(boxoffice.EBADREQUEST, "err_webhook_unreadable")
	}
	ev, err := toss.ParseWebhook(body)
	if errors.Is(err, toss.ErrUnknownEventType) {
		// An event we do not act on (say, a deposit callback): 200, or the PG
		// would retry it for days.
		return answerJSON(c, http.StatusOK, map[string]any{"ignored": true})
	} else if err != nil {
		return err
	}
	conf, err := s.Checkout.ConfirmWebhook(c.Request().Context(), ev.Data.PaymentKey, ev.Data.OrderID)
	if boxoffice.ErrorCode(err) == boxoffice.ENOTFOUND {
		s.Logger.Warn("webhook for an order that is not ours", "order_id", ev.Data.OrderID, "payment_key", ev.Data.PaymentKey)
		return answerJSON(c, http.StatusOK, map[string]any{"ignored": true})
	} else if err != nil {
		return err
	}
	if st := ev.Data.Status; st == boxoffice.PaymentStatusCanceled || st == boxoffice.PaymentStatusPartialCanceled {
		// A refund, ours or one made at the PG's dashboard: applied once,
		// from the PG's own record of the payment.
		canceled, err := s.Refunds.ApplyPGCancels(c.Request().Context(), ev.Data.PaymentKey, ev.Data.OrderID)
		if err != nil {
			return err
		}
		if canceled {
			o, err := s.Orders.FindOrderByID(c.Request().Context(), ev.Data.OrderID)
			if err != nil {
				return err
			}
			return answerJSON(c, http.StatusOK, map[string]any{"order_id": o.ID, "status": o.Status, "outcome": boxoffice.PaymentRefunded})
		}
	}
	return answerJSON(c, http.StatusOK, map[string]any{"order_id": conf.Order.ID, "status": conf.Order.Status, "outcome": conf.Outcome})
}
