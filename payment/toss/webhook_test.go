package toss_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/toss"
)

// tossWebhook is a PAYMENT_STATUS_CHANGED webhook as Toss sends it: many
// fields boxoffice does not read, and createdAt without a zone.
const tossWebhook = `{
  "createdAt": "2026-01-02T14:46:59.653270",
  "eventType": "PAYMENT_STATUS_CHANGED",
  "data": {
    "mId": "tosspayments", "version": "2022-11-16", "lastTransactionKey": "txrd_a01",
    "paymentKey": "tviva20260102144643uN3L9", "orderId": "order_2966480", "orderName": "R seat x2",
    "taxExemptionAmount": 0, "status": "DONE",
    "requestedAt": "2026-01-02T14:46:43+09:00", "approvedAt": "2026-01-02T14:46:58+09:00",
    "useEscrow": false, "cultureExpense": false, "card": null, "virtualAccount": null,
    "cancels": null, "type": "NORMAL", "easyPay": null, "country": "KR", "failure": null,
    "isPartialCancelable": true, "receipt": {"url": "https://dashboard.tosspayments.com/receipt"},
    "currency": "KRW", "totalAmount": 37400, "balanceAmount": 37400, "suppliedAmount": 34000,
    "vat": 3400, "taxFreeAmount": 0, "method": "카드", "metadata": null
  }
}`

func TestParseWebhook(t *testing.T) {
	t.Run("Toss", func(t *testing.T) {
		ev, err := toss.ParseWebhook([]byte(tossWebhook))
		if err != nil {
			t.Fatalf("ParseWebhook: %v", err)
		}
		p := ev.Data
		if ev.EventType != toss.EventPaymentStatusChanged || ev.CreatedAt != "2026-01-02T14:46:59.653270" ||
			p.PaymentKey != "tviva20260102144643uN3L9" || p.OrderID != "order_2966480" || p.Status != boxoffice.PaymentStatusDone ||
			p.TotalAmount != 37400 || p.BalanceAmount != 37400 || p.Currency != "KRW" || p.Method != "카드" ||
			p.ApprovedAt == nil || p.ApprovedAt.Format("15:04:05Z07:00") != "14:46:58+09:00" || p.Cancels != nil || p.Failure != nil {
			t.Fatalf("parsed %+v", ev)
		}
	})
	tests := []struct {
		name string
		body string
		want error
		code string
	}{
		{"TooLarge", `{"eventType":"PAYMENT_STATUS_CHANGED","x":"` + strings.Repeat("a", toss.MaxWebhookBytes) + `"}`,
			toss.ErrWebhookTooLarge, boxoffice.ETOOLARGE},
		{"Empty", ``, toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"Null", `null`, toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"NotJSON", `eventType=PAYMENT_STATUS_CHANGED`, toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"Array", `[]`, toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"TrailingData", tossWebhook + `{}`, toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"WrongType", `{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":1}}`, toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"NoPaymentKey", `{"eventType":"PAYMENT_STATUS_CHANGED","data":{"orderId":"order-1"}}`, toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"NoOrderID", `{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":"pk"}}`, toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"NULInPaymentKey", `{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":"ab\u0000c","orderId":"order-1"}}`,
			toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"NULInIgnoredField", `{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":"pk","orderId":"order-1","x\u0000":"y"}}`,
			toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"EscapedNULAfterEscapedBackslash", `{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":"pk","orderId":"order-1","x":"\\\u0000"}}`,
			toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"InvalidUTF8InOrderID", "{\"eventType\":\"PAYMENT_STATUS_CHANGED\",\"data\":{\"paymentKey\":\"pk\",\"orderId\":\"order-\xff\"}}",
			toss.ErrWebhookMalformed, boxoffice.EBADREQUEST},
		{"UnknownEventType", `{"eventType":"DEPOSIT_CALLBACK","data":{"paymentKey":"pk","orderId":"order-1"}}`,
			toss.ErrUnknownEventType, boxoffice.EBADREQUEST},
	}
	// A backslash written as \\ before u0000 is text, not a NUL: accepted.
	t.Run("EscapedBackslashBeforeU0000", func(t *testing.T) {
		body := `{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":"pk","orderId":"order-1","x":"\\u0000","y":"u0000"}}`
		if _, err := toss.ParseWebhook([]byte(body)); err != nil {
			t.Fatalf("ParseWebhook(%s): %v, want it accepted", body, err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := toss.ParseWebhook([]byte(tt.body))
			if ev != nil || !errors.Is(err, tt.want) {
				t.Fatalf("ParseWebhook = %+v, %v; want nil, %v", ev, err, tt.want)
			}
			if code := boxoffice.ErrorCode(err); code != tt.code {
				t.Fatalf("error code %q, want %q", code, tt.code)
			}
		})
	}
}

func FuzzParseWebhook(f *testing.F) {
	f.Add([]byte(tossWebhook))
	f.Add([]byte(`{"eventType":"PAYMENT_STATUS_CHANGED","createdAt":"x","data":{"paymentKey":"pk","orderId":"o","cancels":[{"cancelAmount":1}]}}`))
	f.Add([]byte(`{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":"pk","orderId":"o","approvedAt":"not a time"}}`))
	f.Add([]byte(`{"eventType":"DEPOSIT_CALLBACK"}`))
	f.Add([]byte(`{"data":{"failure":{"code":"X"}}}{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":"p\u0000k","orderId":"o\xff"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := toss.ParseWebhook(body)
		if (ev == nil) == (err == nil) {
			t.Fatalf("ParseWebhook = %v, %v; want exactly one of event and error", ev, err)
		}
		if err == nil && (ev.EventType != toss.EventPaymentStatusChanged || ev.Data.PaymentKey == "" || ev.Data.OrderID == "") {
			t.Fatalf("accepted %+v", ev)
		}
		if err == nil {
			for _, s := range []string{ev.EventType, ev.CreatedAt, ev.Data.PaymentKey, ev.Data.OrderID, string(ev.Data.Status), ev.Data.Currency, ev.Data.Method} {
				if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
					t.Fatalf("accepted the unreadable string %q", s)
				}
			}
		}
		if err != nil && boxoffice.ErrorCode(err) == boxoffice.EINTERNAL {
			t.Fatalf("error %v is not a *boxoffice.Error", err)
		}
	})
}

// BenchmarkParseWebhook parses Toss's example webhook, as the app does for each
// webhook of a paid order (docs/performance.md, "The paying path's CPU in the
// server").
func BenchmarkParseWebhook(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := toss.ParseWebhook([]byte(tossWebhook)); err != nil {
			b.Fatal(err)
		}
	}
}
