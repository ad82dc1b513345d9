package payment

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxAnswerBytes bounds what the client reads of one PG answer.
const maxAnswerBytes = 1 << 20

// defaultHTTP is used when Client.HTTP is nil. Toss recommends waiting up to
// 30 s for an answer before treating the outcome as unknown.
var defaultHTTP = &http.Client{Timeout: 30 * time.Second}

// Client calls the Toss Payments API (docs.tosspayments.com/reference) or the
// sandbox PG, which answers the same API. It is safe for concurrent use.
//
// Going live takes only BaseURL "https://api.tosspayments.com" and a live
// secret key. The one part that differs is the checkout: Toss's payment window
// is its JavaScript SDK (docs.tosspayments.com/sdk/v2/js, requestPayment with
// the same orderId, amount, orderName, successUrl and failUrl), while the
// sandbox serves a plain page at CheckoutURL.
type Client struct {
	// BaseURL is the API's root without a trailing slash, for example
	// "https://api.tosspayments.com" or "http://127.0.0.1:8080/sandbox-pg".
	BaseURL string
	// SecretKey is the API secret key ("test_sk_…" or "live_sk_…" at Toss).
	SecretKey string
	// HTTP sends the requests; nil means a client with a 30 s timeout.
	HTTP *http.Client
}

// Confirm confirms (approves) the payment the buyer authenticated: POST
// /v1/payments/confirm (docs.tosspayments.com/reference#결제-승인). Only this
// call moves money. orderID and amount must be the order's, from our own
// database, never the redirect's query string; amount is in won.
//
// The Idempotency-Key is "confirm:<orderID>:<paymentKey>" (at most 273
// characters), so that a repeat of this call for the same payment of the same
// order (a retry, the redirect and the webhook racing) gets the first answer
// back for 15 days, while two payments of one order never share a key, and
// neither does a confirm that names another order (a forged redirect): the
// PG's refusal of that one is never replayed to the right order's confirm. A
// replayed answer may be stale: look the payment up for its status now.
//
// Errors: *APIError; ALREADY_PROCESSED_PAYMENT means the payment was confirmed
// (or failed) before and must be looked up, not treated as a failure; card
// refusals (INVALID_REJECT_CARD, ...) are final; see IsTemporary.
func (c *Client) Confirm(ctx context.Context, paymentKey, orderID string, amount int64) (*Payment, error) {
	body := map[string]any{"paymentKey": paymentKey, "orderId": orderID, "amount": amount}
	return c.do(ctx, http.MethodPost, "/v1/payments/confirm", "confirm:"+orderID+":"+paymentKey, body)
}

// GetPayment looks a payment up by its key: GET /v1/payments/{paymentKey}
// (docs.tosspayments.com/reference#paymentkey로-결제-조회). Errors: *APIError
// NOT_FOUND_PAYMENT for an unknown key.
func (c *Client) GetPayment(ctx context.Context, paymentKey string) (*Payment, error) {
	return c.do(ctx, http.MethodGet, "/v1/payments/"+url.PathEscape(paymentKey), "", nil)
}

// GetPaymentByOrderID looks up the payment of an order: GET
// /v1/payments/orders/{orderId} (docs.tosspayments.com/reference#orderid로-결제-조회).
// When an order has several payments the sandbox answers the latest. Errors:
// *APIError NOT_FOUND_PAYMENT when the order has none.
func (c *Client) GetPaymentByOrderID(ctx context.Context, orderID string) (*Payment, error) {
	return c.do(ctx, http.MethodGet, "/v1/payments/orders/"+url.PathEscape(orderID), "", nil)
}

// Cancel refunds a confirmed payment in full: POST
// /v1/payments/{paymentKey}/cancel with {"cancelReason"}
// (docs.tosspayments.com/reference#결제-취소). reason is required (Toss allows
// 200 characters). The answer is the payment with status CANCELED and an entry
// in Cancels. The Idempotency-Key is "cancel:<paymentKey>", so a repeat never
// refunds twice and gets the first answer back.
//
// Errors: *APIError ALREADY_CANCELED_PAYMENT (cancelled before),
// NOT_CANCELABLE_PAYMENT (for example never confirmed), NOT_FOUND_PAYMENT.
func (c *Client) Cancel(ctx context.Context, paymentKey, reason string) (*Payment, error) {
	body := map[string]any{"cancelReason": reason}
	return c.do(ctx, http.MethodPost, "/v1/payments/"+url.PathEscape(paymentKey)+"/cancel", "cancel:"+paymentKey, body)
}

// CheckoutURL returns the sandbox's payment page for an order:
// {BaseURL}/checkout?orderId&amount&orderName&successUrl&failUrl, amount in
// won. The buyer authenticates there and is redirected to successURL or
// failURL as Toss's payment window would. Toss has no such URL: live, the page
// opens Toss's payment window with its JavaScript SDK and the same values.
func (c *Client) CheckoutURL(orderID string, amount int64, orderName, successURL, failURL string) string {
	q := url.Values{
		"orderId":    {orderID},
		"amount":     {strconv.FormatInt(amount, 10)},
		"orderName":  {orderName},
		"successUrl": {successURL},
		"failUrl":    {failURL},
	}
	return strings.TrimSuffix(c.BaseURL, "/") + "/checkout?" + q.Encode()
}

// do sends one API request with Basic authentication (the secret key and a
// colon, docs.tosspayments.com/reference/using-api/authorization) and reads a
// Payment, or an *APIError for a non-2xx answer.
func (c *Client) do(ctx context.Context, method, path, idempotencyKey string, in any) (*Payment, error) {
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
	var p Payment
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("toss payments: %s %s: read payment: %w", method, path, err)
	}
	return &p, nil
}

// parseAPIError reads Toss's {"code", "message"}; any other body becomes the
// message, cut to 200 bytes, with an empty code.
func parseAPIError(status int, raw []byte) *APIError {
	var body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Code != "" {
		return &APIError{Status: status, Code: body.Code, Message: body.Message}
	}
	msg := strings.ToValidUTF8(string(raw[:min(len(raw), 200)]), "")
	return &APIError{Status: status, Message: strings.TrimSpace(msg)}
}
