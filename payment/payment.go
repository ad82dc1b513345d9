// Package payment speaks to the payment gateway (PG): Client calls the Toss
// Payments API (confirm, look-up, cancel), ParseWebhook reads its webhooks, and
// Sandbox is a PG of our own that answers that API like Toss does, for
// development and tests. The app reaches the sandbox over HTTP exactly as it
// would reach Toss, so pointing Client.BaseURL and Client.SecretKey at
// https://api.tosspayments.com is all it takes to go live.
//
// The model (docs.tosspayments.com/guides/v2/payment-widget/integration,
// "결제 승인"): the buyer authenticates at the PG, which redirects to the
// merchant's successUrl with paymentKey, orderId and amount; nothing is charged
// until the merchant confirms with POST /v1/payments/confirm, within about 10
// minutes. See /work/shared/PAYMENTS.md.
package payment

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// MaxPaymentKeyLen is Toss's limit on a paymentKey, in bytes (the payment
// table holds the same).
const MaxPaymentKeyLen = 200

// orderIDPattern is Toss's rule for orderId: 6 to 64 of [A-Za-z0-9_-].
var orderIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{6,64}$`)

// ValidOrderID reports whether id is an orderId as Toss accepts it: 6 to 64
// of [A-Za-z0-9_-]. Every boxoffice order id is one, so anything else names
// no order.
func ValidOrderID(id string) bool { return orderIDPattern.MatchString(id) }

// ValidPaymentKey reports whether key can be a paymentKey: 1 to
// MaxPaymentKeyLen bytes.
func ValidPaymentKey(key string) bool { return key != "" && len(key) <= MaxPaymentKeyLen }

// Payment statuses, as Toss reports them in Payment.Status
// (docs.tosspayments.com/reference#payment-객체, "status").
const (
	StatusReady             = "READY"               // created, the buyer has not authenticated yet
	StatusInProgress        = "IN_PROGRESS"         // authenticated, waiting for the merchant's confirm
	StatusWaitingForDeposit = "WAITING_FOR_DEPOSIT" // virtual account issued, not paid yet
	StatusDone              = "DONE"                // confirmed: the money moved
	StatusCanceled          = "CANCELED"            // refunded in full
	StatusPartialCanceled   = "PARTIAL_CANCELED"    // refunded in part
	StatusAborted           = "ABORTED"             // the confirm failed (for example a refused card)
	StatusExpired           = "EXPIRED"             // not confirmed in time; nothing was charged
)

// Error codes of the Toss API (docs.tosspayments.com/reference/error-codes)
// that boxoffice acts on, and the codes the payment window sends to failUrl.
const (
	CodeAlreadyProcessedPayment = "ALREADY_PROCESSED_PAYMENT" // 400: confirmed (or failed) before; look it up
	CodeProviderError           = "PROVIDER_ERROR"            // 400: temporary; retry
	CodeInvalidRequest          = "INVALID_REQUEST"           // 400: for example orderId or amount does not match the payment
	CodeInvalidAPIKey           = "INVALID_API_KEY"           // 400
	CodeUnauthorizedKey         = "UNAUTHORIZED_KEY"          // 401: wrong or missing secret key
	CodeInvalidRejectCard       = "INVALID_REJECT_CARD"       // 400: the card issuer refused
	CodeInvalidStoppedCard      = "INVALID_STOPPED_CARD"      // 400: a suspended card
	CodeNotFoundPayment         = "NOT_FOUND_PAYMENT"         // 404
	CodeAlreadyCanceledPayment  = "ALREADY_CANCELED_PAYMENT"  // 400: cancelled before
	CodeNotCancelablePayment    = "NOT_CANCELABLE_PAYMENT"    // 403: for example never confirmed
	CodeNotCancelableAmount     = "NOT_CANCELABLE_AMOUNT"     // 403
	CodePayProcessCanceled      = "PAY_PROCESS_CANCELED"      // failUrl: the buyer gave up
	CodePayProcessAborted       = "PAY_PROCESS_ABORTED"       // failUrl: the authentication failed
)

// Payment is Toss's Payment object (docs.tosspayments.com/reference#payment-객체),
// the fields boxoffice reads. Amounts are in the currency's minor unit (KRW has
// none, so won). Toss sends many more fields; they are ignored.
type Payment struct {
	PaymentKey    string    `json:"paymentKey"`
	OrderID       string    `json:"orderId"`
	OrderName     string    `json:"orderName"`
	Status        string    `json:"status"`   // one of the Status constants
	Method        string    `json:"method"`   // Toss's Korean name, for example "카드"
	Currency      string    `json:"currency"` // ISO 4217, "KRW"
	TotalAmount   int64     `json:"totalAmount"`
	BalanceAmount int64     `json:"balanceAmount"` // what is left after refunds
	RequestedAt   time.Time `json:"requestedAt"`
	// ApprovedAt is when the confirm succeeded; nil before.
	ApprovedAt *time.Time `json:"approvedAt"`
	Cancels    []Cancel   `json:"cancels"`
	// Failure says why the payment failed (status ABORTED or EXPIRED); nil otherwise.
	Failure *Failure `json:"failure"`
}

// Cancel is one refund of a payment, an entry of Payment.Cancels.
type Cancel struct {
	CancelAmount   int64     `json:"cancelAmount"`
	CancelReason   string    `json:"cancelReason"`
	CanceledAt     time.Time `json:"canceledAt"`
	TransactionKey string    `json:"transactionKey"`
	CancelStatus   string    `json:"cancelStatus"` // "DONE" once refunded
}

// Failure is the error object of a failed payment.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// APIError is an error answer of the Toss API: the HTTP status and the body's
// {"code", "message"} (docs.tosspayments.com/reference/error-codes). Code is
// "" when the body was not Toss's JSON (a proxy's error page, for example).
type APIError struct {
	Status  int
	Code    string
	Message string
}

// Error implements the error interface.
func (e *APIError) Error() string {
	return fmt.Sprintf("toss payments: status %d: %s: %s", e.Status, e.Code, e.Message)
}

// Temporary reports whether the PG may give another answer later: a 5xx, a
// 429, or PROVIDER_ERROR. Every other error answer is final.
func (e *APIError) Temporary() bool {
	return e.Status >= 500 || e.Status == 429 || e.Code == CodeProviderError
}

// IsCode reports whether err's chain holds an *APIError with this code.
func IsCode(err error, code string) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == code
}

// IsTemporary reports whether err leaves the outcome open, so that the caller
// should retry or look the payment up later instead of treating it as final: a
// temporary *APIError (see APIError.Temporary), or any error that is not an
// *APIError (a network error, a timeout, a cancelled context, an answer that
// could not be read), since the PG's answer is then unknown. It is false for
// nil and for final *APIError answers.
func IsTemporary(err error) bool {
	if err == nil {
		return false
	}
	var e *APIError
	if errors.As(err, &e) {
		return e.Temporary()
	}
	return true
}
