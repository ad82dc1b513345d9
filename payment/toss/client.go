// Package toss speaks to Toss Payments, the payment gateway (PG): Client
// implements boxoffice.PaymentGateway over its API (confirm, look-up,
// cancel) and ParseWebhook reads its webhooks. The sandbox PG
// (payment/sandbox) answers the same API, so the app reaches it with this
// client over HTTP exactly as it would reach Toss.
//
// The model (docs.tosspayments.com/guides/v2/payment-widget/integration,
// "결제 승인"): the buyer authenticates at the PG, which redirects to the
// merchant's successUrl with paymentKey, orderId and amount; nothing is charged
// until the merchant confirms with POST /v1/payments/confirm, within about 10
// minutes. README.md ("Payments") has the rest.
package toss

import (
	"github.com/boxoffice/boxoffice"

	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxAnswerBytes bounds what the client reads of one PG answer.
const maxAnswerBytes = 1 << 20

// defaultHTTP is used when Client.HTTP is nil. Toss recommends waiting up to
// 30 s for an answer before treating the outcome as unknown. It keeps up to
// maxIdlePerHost connections to the PG open between calls (net/http keeps
// 2), so that a sale's confirmations, hundreds at once, reuse connections
// instead of opening (and, at Toss, a TLS handshake) one per call.
var defaultHTTP = &http.Client{Timeout: 30 * time.Second, Transport: KeepAliveTransport()}

// maxIdlePerHost is how many idle connections to one host
// KeepAliveTransport keeps.
const maxIdlePerHost = 128

// KeepAliveTransport returns a new copy of net/http's default transport
// that keeps up to 128 idle connections per host (net/http keeps 2), for a
// client that makes hundreds of calls at once to one host: the PG's API
// (defaultHTTP), or the app's webhook URL for the sandbox PG's deliveries.
// Beyond the second call at once, net/http's default opens a connection
// for each call and closes it after.
func KeepAliveTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = maxIdlePerHost
	t.MaxIdleConnsPerHost = maxIdlePerHost
	return t
}

// Client calls the Toss Payments API (docs.tosspayments.com/reference) or the
// sandbox PG, which answers the same API, and implements
// boxoffice.PaymentGateway. It is safe for concurrent use.
//
// Going live takes BaseURL "https://api.tosspayments.com", a live secret key
// and CheckoutPage, our page that opens Toss's payment window with its
// JavaScript SDK (docs.tosspayments.com/sdk/v2/js); the sandbox serves a
// payment page of its own at {BaseURL}/checkout instead.
type Client struct {
	// BaseURL is the API's root without a trailing slash, for example
	// "https://api.tosspayments.com" or "http://127.0.0.1:8080/sandbox-pg".
	BaseURL string
	// SecretKey is the API secret key ("test_sk_…" or "live_sk_…" at Toss).
	SecretKey string
	// CheckoutPage is the page that opens the payment window
	// (BASE_URL/payments/checkout with PG_PROVIDER=toss); "" means the
	// sandbox's page, {BaseURL}/checkout.
	CheckoutPage string
	// Accepts lists the ISO 4217 codes payments may be in: Toss's payment
	// window takes KRW only (TossCurrencies); nil means TossCurrencies.
	Accepts []string
	// HTTP sends the requests; nil means a client with a 30 s timeout.
	HTTP *http.Client
}

// TossCurrencies are the currencies Toss's payment window takes for a
// Korean merchant: won.
var TossCurrencies = []string{"KRW"}

var _ boxoffice.PaymentGateway = (*Client)(nil)

// Currencies lists the ISO 4217 codes the PG takes (Accepts).
func (c *Client) Currencies() []string {
	if c.Accepts != nil {
		return c.Accepts
	}
	return TossCurrencies
}

// errCurrency is the PG's currency check: a *boxoffice.PGError
// PGCurrencyMismatch, final.
func errCurrency(format string, args ...any) error {
	return &boxoffice.PGError{Code: boxoffice.PGCurrencyMismatch, Message: fmt.Sprintf(format, args...)}
}

// Confirm confirms (approves) the payment the buyer authenticated: POST
// /v1/payments/confirm with {"paymentKey", "orderId", "amount"}
// (docs.tosspayments.com/reference#결제-승인). Only this call moves money.
// orderID and amount must be the order's, from our own database, never the
// redirect's query string; amount is in the minor unit of its currency,
// which must be one the PG takes (Currencies): Toss's confirm carries no
// currency, so one it does not take is refused here, before any call, and
// an answer in another currency than amount's is an error.
//
// The Idempotency-Key is "confirm:<orderID>:<paymentKey>" (at most 273
// characters), so that a repeat of this call for the same payment of the same
// order (a retry, the redirect and the webhook racing) gets the first answer
// back for 15 days, while two payments of one order never share a key, and
// neither does a confirm that names another order (a forged redirect): the
// PG's refusal of that one is never replayed to the right order's confirm. A
// replayed answer may be stale: look the payment up for its status now.
//
// Errors: *boxoffice.PGError; ALREADY_PROCESSED_PAYMENT means the payment was
// confirmed (or failed) before and must be looked up, not treated as a
// failure; card refusals (INVALID_REJECT_CARD, ...) are final;
// CURRENCY_MISMATCH as said; see boxoffice.IsPGTemporary.
func (c *Client) Confirm(ctx context.Context, paymentKey, orderID string, amount boxoffice.Money) (*boxoffice.Payment, error) {
	if !slices.Contains(c.Currencies(), amount.Currency) {
		return nil, errCurrency("the PG takes %v, not %s", c.Currencies(), amount.Currency)
	}
	body := map[string]any{"paymentKey": paymentKey, "orderId": orderID, "amount": amount.Amount}
	p, err := c.do(ctx, http.MethodPost, "/v1/payments/confirm", "confirm:"+orderID+":"+paymentKey, body)
	if err == nil && p.Currency != amount.Currency {
		return p, errCurrency("confirmed %s, asked for %s", p.Total(), amount)
	}
	return p, err
}

// GetPayment looks a payment up by its key: GET /v1/payments/{paymentKey}
// (docs.tosspayments.com/reference#paymentkey로-결제-조회). Errors:
// *boxoffice.PGError NOT_FOUND_PAYMENT for an unknown key.
func (c *Client) GetPayment(ctx context.Context, paymentKey string) (*boxoffice.Payment, error) {
	return c.do(ctx, http.MethodGet, "/v1/payments/"+url.PathEscape(paymentKey), "", nil)
}

// GetPaymentByOrderID looks up the payment of an order: GET
// /v1/payments/orders/{orderId} (docs.tosspayments.com/reference#orderid로-결제-조회).
// When an order has several payments the sandbox answers the latest. Errors:
// *boxoffice.PGError NOT_FOUND_PAYMENT when the order has none.
func (c *Client) GetPaymentByOrderID(ctx context.Context, orderID string) (*boxoffice.Payment, error) {
	return c.do(ctx, http.MethodGet, "/v1/payments/orders/"+url.PathEscape(orderID), "", nil)
}

// maxCancelReason is Toss's limit on cancelReason, in characters.
const maxCancelReason = 200

// Cancel refunds a confirmed payment: POST /v1/payments/{paymentKey}/cancel
// with {"cancelReason"} for all that is left, or {"cancelReason",
// "cancelAmount", "currency"} for a part (docs.tosspayments.com/reference#결제-취소).
// The answer is the payment with status CANCELED (or PARTIAL_CANCELED) and an
// entry in Cancels. The Idempotency-Key is "cancel:<paymentKey>" for a full
// refund and "cancel:<paymentKey>:<RefundID>" for a partial one, so that a
// repeat never refunds twice and gets the first answer back.
//
// Errors: *boxoffice.Error EBADREQUEST for a request without a reason (or
// one over 200 characters), or a partial one without RefundID, with an
// amount not above 0 or in a currency the PG does not take, before any call;
// *boxoffice.PGError ALREADY_CANCELED_PAYMENT (nothing left),
// NOT_CANCELABLE_PAYMENT (for example never confirmed),
// NOT_CANCELABLE_AMOUNT (more than is left), NOT_FOUND_PAYMENT.
func (c *Client) Cancel(ctx context.Context, paymentKey string, r boxoffice.CancelRequest) (*boxoffice.Payment, error) {
	if r.Reason == "" || utf8.RuneCountInString(r.Reason) > maxCancelReason {
		return nil, boxoffice.NewError(boxoffice.EBADREQUEST, "err_cancel_request")
	}
	body := map[string]any{"cancelReason": r.Reason}
	key := "cancel:" + paymentKey
	if r.Amount != nil {
		if r.RefundID == "" || r.Amount.Amount <= 0 || !slices.Contains(c.Currencies(), r.Amount.Currency) {
			return nil, boxoffice.NewError(boxoffice.EBADREQUEST, "err_cancel_request")
		}
		body["cancelAmount"] = r.Amount.Amount
		body["currency"] = r.Amount.Currency
		key += ":" + r.RefundID
	}
	return c.do(ctx, http.MethodPost, "/v1/payments/"+url.PathEscape(paymentKey)+"/cancel", key, body)
}

// CheckoutURL returns where the buyer pays for an order. With CheckoutPage
// set (Toss) it is that page, {CheckoutPage}?orderId=…, which reads the
// order from our own database and opens Toss's payment window. Otherwise it
// is the sandbox's payment page,
// {BaseURL}/checkout?orderId&amount&currency&orderName&successUrl&failUrl,
// amount in the currency's minor unit; the buyer authenticates there and is
// redirected to successUrl or failUrl as Toss's payment window would.
func (c *Client) CheckoutURL(r boxoffice.CheckoutRequest) string {
	if c.CheckoutPage != "" {
		return c.CheckoutPage + "?" + url.Values{"orderId": {r.OrderID}}.Encode()
	}
	q := url.Values{
		"orderId":    {r.OrderID},
		"amount":     {strconv.FormatInt(r.Amount.Amount, 10)},
		"currency":   {r.Amount.Currency},
		"orderName":  {r.OrderName},
		"successUrl": {r.SuccessURL},
		"failUrl":    {r.FailURL},
	}
	return strings.TrimSuffix(c.BaseURL, "/") + "/checkout?" + q.Encode()
}

// do sends one API request with Basic authentication (the secret key and a
// colon, docs.tosspayments.com/reference/using-api/authorization) and reads a
// boxoffice.Payment, or an *boxoffice.PGError for a non-2xx answer.
func (c *Client) do(ctx context.Context, method, path, idempotencyKey string, in any) (*boxoffice.Payment, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("toss payments: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, body)
	if err != nil {
		return nil, fmt.Errorf("toss payments: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(c.SecretKey+":")))
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("toss payments: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("toss payments: %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, parseAPIError(resp.StatusCode, raw)
	}
	var p boxoffice.Payment
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("toss payments: %s %s: read payment: %w", method, path, err)
	}
	return &p, nil
}

// parseAPIError reads Toss's {"code", "message"}; any other body becomes the
// message, cut to 200 bytes, with an empty code.
func parseAPIError(status int, raw []byte) *boxoffice.PGError {
	var body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Code != "" {
		return &boxoffice.PGError{Status: status, Code: body.Code, Message: body.Message}
	}
	msg := strings.ToValidUTF8(string(raw[:min(len(raw), 200)]), "")
	return &boxoffice.PGError{Status: status, Message: strings.TrimSpace(msg)}
}
