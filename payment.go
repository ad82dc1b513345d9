package boxoffice

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Money is an amount with its currency: Amount in the currency's minor unit
// (cents for USD; KRW has none, so won) and Currency an ISO 4217 code in
// upper case. An amount never crosses a package boundary without its
// currency.
type Money struct {
	Amount   int64
	Currency string
}

// String returns "15000 KRW": the amount in minor units and the code, for
// logs and operators' details (people read Money through views.Money).
func (m Money) String() string { return strconv.FormatInt(m.Amount, 10) + " " + m.Currency }

// MaxPaymentKeyLen is the PG's limit on a paymentKey, in bytes (the payment
// table holds the same).
const MaxPaymentKeyLen = 200

// orderIDPattern is the PG's rule for orderId: 6 to 64 of [A-Za-z0-9_-].
var orderIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{6,64}$`)

// ValidOrderID reports whether id is an orderId as the PG accepts it: 6 to 64
// of [A-Za-z0-9_-]. Every boxoffice order id is one, so anything else names
// no order.
func ValidOrderID(id string) bool { return orderIDPattern.MatchString(id) }

// ValidPaymentKey reports whether key can be a paymentKey: 1 to
// MaxPaymentKeyLen bytes.
func ValidPaymentKey(key string) bool { return key != "" && len(key) <= MaxPaymentKeyLen }

// PaymentStatus is where a payment stands at the PG (Toss's Payment.status,
// docs.tosspayments.com/reference#payment-객체).
type PaymentStatus string

// Payment statuses.
const (
	PaymentStatusReady             PaymentStatus = "READY"               // created, the buyer has not authenticated yet
	PaymentStatusInProgress        PaymentStatus = "IN_PROGRESS"         // authenticated, waiting for the merchant's confirm
	PaymentStatusWaitingForDeposit PaymentStatus = "WAITING_FOR_DEPOSIT" // virtual account issued, not paid yet
	PaymentStatusDone              PaymentStatus = "DONE"                // confirmed: the money moved
	PaymentStatusCanceled          PaymentStatus = "CANCELED"            // refunded in full
	PaymentStatusPartialCanceled   PaymentStatus = "PARTIAL_CANCELED"    // refunded in part
	PaymentStatusAborted           PaymentStatus = "ABORTED"             // the confirm failed (for example a refused card)
	PaymentStatusExpired           PaymentStatus = "EXPIRED"             // not confirmed in time; nothing was charged
)

// Error codes of the PG's API (docs.tosspayments.com/reference/error-codes)
// that boxoffice acts on, and the codes the payment window sends to failUrl.
const (
	PGAlreadyProcessedPayment = "ALREADY_PROCESSED_PAYMENT" // 400: confirmed (or failed) before; look it up
	PGProviderError           = "PROVIDER_ERROR"            // 400: temporary; retry
	PGInvalidRequest          = "INVALID_REQUEST"           // 400: for example orderId or amount does not match the payment
	PGInvalidAPIKey           = "INVALID_API_KEY"           // 400
	PGUnauthorizedKey         = "UNAUTHORIZED_KEY"          // 401: wrong or missing secret key
	PGInvalidRejectCard       = "INVALID_REJECT_CARD"       // 400: the card issuer refused
	PGInvalidStoppedCard      = "INVALID_STOPPED_CARD"      // 400: a suspended card
	PGNotFoundPayment         = "NOT_FOUND_PAYMENT"         // 404
	PGAlreadyCanceledPayment  = "ALREADY_CANCELED_PAYMENT"  // 400: cancelled before
	PGNotCancelablePayment    = "NOT_CANCELABLE_PAYMENT"    // 403: for example never confirmed
	PGNotCancelableAmount     = "NOT_CANCELABLE_AMOUNT"     // 403: more than is left to refund
	PGPayProcessCanceled      = "PAY_PROCESS_CANCELED"      // failUrl: the buyer closed the payment window
	PGPayProcessAborted       = "PAY_PROCESS_ABORTED"       // failUrl: the authentication failed
	// PGCurrencyMismatch is ours, not the PG's: the PG answered a payment in
	// another currency than the one asked for (PGError.Status 0).
	PGCurrencyMismatch = "CURRENCY_MISMATCH"
)

// Payment is the PG's payment, in Toss's JSON (the Payment object,
// docs.tosspayments.com/reference#payment-객체), the fields boxoffice reads.
// Amounts are in the minor unit of Currency (KRW has none, so won); read them
// with Total and Balance. The PG sends many more fields; they are ignored.
type Payment struct {
	PaymentKey    string        `json:"paymentKey"`
	OrderID       string        `json:"orderId"`
	OrderName     string        `json:"orderName"`
	Status        PaymentStatus `json:"status"`
	Method        string        `json:"method"`   // the PG's Korean name, for example "카드"
	Currency      string        `json:"currency"` // ISO 4217, "KRW"
	TotalAmount   int64         `json:"totalAmount"`
	BalanceAmount int64         `json:"balanceAmount"` // what is left after refunds
	RequestedAt   time.Time     `json:"requestedAt"`
	// ApprovedAt is when the confirm succeeded; nil before.
	ApprovedAt *time.Time      `json:"approvedAt"`
	Cancels    []PaymentCancel `json:"cancels"`
	// Failure says why the payment failed (status ABORTED or EXPIRED); nil otherwise.
	Failure *PaymentFailure `json:"failure"`
}

// Total returns what the buyer paid, with its currency.
func (p *Payment) Total() Money { return Money{Amount: p.TotalAmount, Currency: p.Currency} }

// Balance returns what is left after refunds, with its currency.
func (p *Payment) Balance() Money { return Money{Amount: p.BalanceAmount, Currency: p.Currency} }

// PaymentCancel is one refund of a payment, an entry of Payment.Cancels;
// CancelAmount is in the payment's currency's minor unit.
type PaymentCancel struct {
	CancelAmount   int64     `json:"cancelAmount"`
	CancelReason   string    `json:"cancelReason"`
	CanceledAt     time.Time `json:"canceledAt"`
	TransactionKey string    `json:"transactionKey"`
	CancelStatus   string    `json:"cancelStatus"` // "DONE" once refunded
}

// PaymentFailure is the error object of a failed payment.
type PaymentFailure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// PGError is an error answer of the PG: the HTTP status and the body's
// {"code", "message"} (docs.tosspayments.com/reference/error-codes). Code is
// "" when the body was not the PG's JSON (a proxy's error page, for example).
type PGError struct {
	Status  int
	Code    string
	Message string
}

// Error implements the error interface.
func (e *PGError) Error() string {
	return fmt.Sprintf("payment gateway: status %d: %s: %s", e.Status, e.Code, e.Message)
}

// Temporary reports whether the PG may give another answer later: a 5xx, a
// 429, or PROVIDER_ERROR. Every other error answer is final.
func (e *PGError) Temporary() bool {
	return e.Status >= 500 || e.Status == 429 || e.Code == PGProviderError
}

// IsPGCode reports whether err's chain holds a *PGError with this code.
func IsPGCode(err error, code string) bool {
	var e *PGError
	return errors.As(err, &e) && e.Code == code
}

// IsPGTemporary reports whether err leaves the PG's outcome open, so that
// the caller should retry or look the payment up later instead of treating
// it as final: a temporary *PGError (see PGError.Temporary), or any error
// that is not a *PGError (a network error, a timeout, a cancelled context,
// an answer that could not be read), since the PG's answer is then unknown.
// It is false for nil and for final *PGError answers.
func IsPGTemporary(err error) bool {
	if err == nil {
		return false
	}
	var e *PGError
	if errors.As(err, &e) {
		return e.Temporary()
	}
	return true
}

// CheckoutRequest is what the PG's payment window needs to take an order's
// payment: the order's id (an orderId, ValidOrderID), the name the buyer
// sees (at most 100 characters), the amount with its currency, and where the
// PG sends the buyer back (BASE_URL/payments/success and /payments/fail).
type CheckoutRequest struct {
	OrderID    string
	OrderName  string
	Amount     Money
	SuccessURL string
	FailURL    string
}

// CancelRequest asks the PG to cancel (refund) a confirmed payment. Reason is
// required (the PG allows 200 characters). Amount nil refunds all that is
// left; otherwise it is the part to refund (cancelAmount), in the payment's
// currency's minor unit. RefundID names one partial refund and is required
// with Amount: a repeat with the same RefundID refunds once, two partial
// refunds of one payment need two ids. A full refund is one per payment.
type CancelRequest struct {
	Reason   string
	Amount   *Money
	RefundID string
}

// PaymentGateway is the PG as boxoffice uses it: payment/toss implements it
// against Toss Payments, payment/sandbox runs a PG of our own that answers
// Toss's API. Every call that moves money is idempotent at the PG, so that
// repeats (the redirect and the webhook racing, retries) move it once. All
// methods are safe for concurrent use.
type PaymentGateway interface {
	// Confirm confirms (approves) the payment the buyer authenticated: the
	// only call that moves money. orderID and amount must be the order's,
	// from our own database, never the redirect's query string. The answer
	// may be a replay of the first one: look the payment up for its status
	// now. Errors: *PGError; PGAlreadyProcessedPayment means the payment
	// was confirmed (or failed) before and must be looked up; card refusals
	// are final; PGCurrencyMismatch when amount's currency is not one the PG
	// takes or the PG answered in another (see IsPGTemporary).
	Confirm(ctx context.Context, paymentKey, orderID string, amount Money) (*Payment, error)
	// GetPayment looks a payment up by its key. Errors: *PGError
	// PGNotFoundPayment for an unknown key.
	GetPayment(ctx context.Context, paymentKey string) (*Payment, error)
	// GetPaymentByOrderID looks up the (latest) payment of an order. Errors:
	// *PGError PGNotFoundPayment when the order has none.
	GetPaymentByOrderID(ctx context.Context, orderID string) (*Payment, error)
	// Cancel refunds a confirmed payment at the PG, in full or in part (see
	// CancelRequest); the answer is the payment after it. Errors: *PGError
	// PGAlreadyCanceledPayment (nothing is left to refund),
	// PGNotCancelablePayment (for example never confirmed),
	// PGNotCancelableAmount (more than is left), PGNotFoundPayment; an
	// *Error EBADREQUEST for a request without a reason, or a partial one
	// without RefundID or in another currency.
	Cancel(ctx context.Context, paymentKey string, r CancelRequest) (*Payment, error)
	// CheckoutURL returns where to send the buyer to pay: the page that opens
	// the PG's payment window for the request.
	CheckoutURL(r CheckoutRequest) string
	// Currencies lists the ISO 4217 codes the PG takes payments in.
	Currencies() []string
}

// CustomerKey returns the PG's customerKey for an account (Toss's payment
// window asks for one, docs.tosspayments.com/sdk/v2/js): stable for the
// account and revealing nothing of it without secret. It is "bo_" and the
// first 24 bytes of HMAC-SHA256 (RFC 2104) with secret over
// "customer|<account id>", base64url without padding: 35 characters of
// [A-Za-z0-9_-], within Toss's 2 to 50.
func CustomerKey(secret []byte, accountID int64) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("customer|" + strconv.FormatInt(accountID, 10)))
	return "bo_" + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:24])
}
