package toss

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/boxoffice/boxoffice"
)

// EventPaymentStatusChanged is the webhook event Toss sends when a payment's
// status changes (docs.tosspayments.com/guides/v2/webhook, "웹훅 이벤트").
const EventPaymentStatusChanged = "PAYMENT_STATUS_CHANGED"

// MaxWebhookBytes bounds a webhook body; a boxoffice.Payment takes a few kilobytes.
const MaxWebhookBytes = 64 << 10

// WebhookCreatedAtLayout is the layout of WebhookEvent.CreatedAt: Toss sends
// the time in Korea without a zone, to the microsecond.
const WebhookCreatedAtLayout = "2006-01-02T15:04:05.000000"

// Errors of ParseWebhook. They are *boxoffice.Error values, so that the
// webhook handler's error table answers 413 and 400; test with errors.Is.
var (
	ErrWebhookTooLarge  = boxoffice.NewError(boxoffice.ETOOLARGE, "err_webhook_too_large")
	ErrWebhookMalformed = boxoffice.NewError(boxoffice.EBADREQUEST, "err_webhook_malformed")
	ErrUnknownEventType = boxoffice.NewError(boxoffice.EBADREQUEST, "err_webhook_event_type")
)

// WebhookEvent is a Toss payment-status webhook:
// {"eventType": "PAYMENT_STATUS_CHANGED", "createdAt", "data": {<boxoffice.Payment>}}
// (docs.tosspayments.com/guides/v2/webhook).
type WebhookEvent struct {
	EventType string `json:"eventType"`
	// CreatedAt is the PG's text, in WebhookCreatedAtLayout (no zone).
	CreatedAt string            `json:"createdAt"`
	Data      boxoffice.Payment `json:"data"`
}

// ParseWebhook reads a webhook body strictly: at most MaxWebhookBytes, one
// JSON object and nothing after it, eventType PAYMENT_STATUS_CHANGED, and a
// payment with a paymentKey (boxoffice.ValidPaymentKey) and an orderId (boxoffice.ValidOrderID). Fields it does not model are
// ignored, since Toss adds fields over time. The body must be valid UTF-8
// and no string in it may hold a NUL byte (PostgreSQL stores neither in
// text). It never panics.
//
// boxoffice.Payment-status webhooks carry no signature, so the body proves nothing: a
// caller uses it only to learn which payment to look at, verifies it with
// Client.GetPayment (authenticated by the secret key) and acts on that answer
// only, never on the body's status or amount.
//
// Errors: ErrWebhookTooLarge, ErrWebhookMalformed, ErrUnknownEventType
// (wrapped; test with errors.Is).
func ParseWebhook(body []byte) (*WebhookEvent, error) {
	if len(body) > MaxWebhookBytes {
		return nil, ErrWebhookTooLarge
	}
	var ev WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil { // data after the JSON value included
		return nil, fmt.Errorf("%w: %v", ErrWebhookMalformed, err)
	}
	if !readableJSON(body) {
		return nil, fmt.Errorf("%w: a string holds a NUL byte or invalid UTF-8", ErrWebhookMalformed)
	}
	if ev.EventType == "" {
		return nil, fmt.Errorf("%w: no eventType", ErrWebhookMalformed)
	}
	if ev.EventType != EventPaymentStatusChanged {
		return nil, fmt.Errorf("%w: %.64q", ErrUnknownEventType, ev.EventType)
	}
	if !boxoffice.ValidPaymentKey(ev.Data.PaymentKey) || !boxoffice.ValidOrderID(ev.Data.OrderID) {
		return nil, fmt.Errorf("%w: no paymentKey or orderId, or one that Toss would not send", ErrWebhookMalformed)
	}
	return &ev, nil
}

// readableJSON reports whether body, a JSON text that decoded, is valid
// UTF-8 (encoding/json would silently replace bad bytes) and none of its
// strings, keys included, holds a NUL byte. Valid JSON has no raw NUL (a
// control character is refused in a string and is no token outside one),
// so a NUL can only be written as the escape \u0000: a backslash that is
// not itself escaped, that is the last of an odd run of backslashes,
// followed by u0000. Backslashes appear in strings only, so the bytes tell
// without decoding the text again.
func readableJSON(body []byte) bool {
	if !utf8.Valid(body) {
		return false
	}
	for at := 0; ; at++ {
		i := bytes.Index(body[at:], []byte(`u0000`))
		if i < 0 {
			return true
		}
		at += i
		run := 0
		for j := at - 1; j >= 0 && body[j] == '\\'; j-- {
			run++
		}
		if run%2 == 1 {
			return false
		}
	}
}
