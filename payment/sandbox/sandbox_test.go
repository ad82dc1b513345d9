package sandbox_test

import (
	"github.com/boxoffice/boxoffice"
	"sync/atomic"

	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store/storetest"
)

func TestNew(t *testing.T) {
	db := storetest.MustOpenDB(t)
	ok := sandbox.Config{Provider: "sandbox", Pool: db.Pool, SecretKey: testSecret}
	tests := []struct {
		name   string
		change func(*sandbox.Config)
	}{
		{"ProviderToss", func(c *sandbox.Config) { c.Provider = "toss" }},
		{"ProviderEmpty", func(c *sandbox.Config) { c.Provider = "" }},
		{"ProviderCase", func(c *sandbox.Config) { c.Provider = "Sandbox" }},
		{"NoPool", func(c *sandbox.Config) { c.Pool = nil }},
		{"NoSecretKey", func(c *sandbox.Config) { c.SecretKey = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.change(&cfg)
			sb, err := sandbox.New(context.Background(), cfg)
			if err == nil {
				sb.Close()
				t.Fatalf("New(%+v) = nil error, want a refusal", cfg)
			}
		})
	}
	t.Run("OK", func(t *testing.T) {
		sb, err := sandbox.New(context.Background(), ok)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if err := sb.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	})
}

func TestSandbox_CheckoutPage(t *testing.T) {
	h := newHarness(t)
	t.Run("OK", func(t *testing.T) {
		checkout := h.client.CheckoutURL(boxoffice.CheckoutRequest{OrderID: "order-page-1", Amount: won(1234500), OrderName: "Concert <R>, 2 seats", SuccessURL: successURL, FailURL: failURL})
		resp, err := h.browser.Get(checkout)
		if err != nil {
			t.Fatalf("GET %s: %v", checkout, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("status %d, Content-Type %q, want 200 text/html", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		if err != nil {
			t.Fatalf("parse page: %v", err)
		}
		// Mounted without the app's language middleware, the page speaks
		// the default language, Korean.
		if got := doc.Find(`[data-testid="pg-amount"]`).Text(); got != "1,234,500원" {
			t.Errorf("pg-amount %q, want %q", got, "1,234,500원")
		}
		if got := doc.Find("html").AttrOr("lang", ""); got != "ko" {
			t.Errorf("<html lang=%q>, want ko", got)
		}
		if got := doc.Find(`[data-testid="pg-order-name"]`).Text(); got != "Concert <R>, 2 seats" {
			t.Errorf("pg-order-name %q, want the order name", got)
		}
		form := doc.Find("form")
		if m, _ := form.Attr("method"); m != "post" {
			t.Errorf("form method %q, want post", m)
		}
		for testid, want := range map[string]string{"pg-pay": "pay", "pg-decline": "decline"} {
			b := form.Find(`button[data-testid="` + testid + `"]`)
			if name, _ := b.Attr("name"); name != "action" {
				t.Errorf("%s name %q, want action", testid, name)
			}
			if v, _ := b.Attr("value"); v != want {
				t.Errorf("%s value %q, want %q", testid, v, want)
			}
		}
		hidden := map[string]string{"orderId": "order-page-1", "amount": "1234500", "orderName": "Concert <R>, 2 seats",
			"successUrl": successURL, "failUrl": failURL}
		for name, want := range hidden {
			if v, _ := form.Find(`input[name="` + name + `"]`).Attr("value"); v != want {
				t.Errorf("input %s = %q, want %q", name, v, want)
			}
		}
		var options []string
		form.Find(`select[name="scenario"] option`).Each(func(_ int, o *goquery.Selection) {
			v, _ := o.Attr("value")
			options = append(options, v)
		})
		if !slices.Equal(options, sandbox.Scenarios) {
			t.Errorf("scenario options %q, want %q", options, sandbox.Scenarios)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		checkout := h.client.CheckoutURL(boxoffice.CheckoutRequest{OrderID: "short", Amount: won(0), OrderName: "", SuccessURL: "/relative", FailURL: "ftp://example.com/x"})
		resp, err := h.browser.Get(checkout)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		if err != nil {
			t.Fatalf("parse page: %v", err)
		}
		var fields []string
		doc.Find(`[data-testid="pg-errors"] li`).Each(func(_ int, li *goquery.Selection) {
			f, _ := li.Attr("data-field")
			fields = append(fields, f)
			if strings.TrimSpace(li.Text()) == "" {
				t.Errorf("reason for %s is empty", f)
			}
		})
		want := []string{"orderId", "amount", "orderName", "successUrl", "failUrl"}
		if !slices.Equal(fields, want) {
			t.Errorf("invalid fields %q, want %q", fields, want)
		}
	})
}

func TestSandbox_Checkout(t *testing.T) {
	h := newHarness(t)
	t.Run("Pay", func(t *testing.T) {
		q := h.pay(t, "order-pay-1", 50000, sandbox.ScenarioDefault)
		if q.Get("orderId") != "order-pay-1" || q.Get("amount") != "50000" || q.Get("paymentType") != "NORMAL" || q.Get("paymentKey") == "" {
			t.Fatalf("redirect query %v, want paymentKey, orderId order-pay-1, amount 50000, paymentType NORMAL", q)
		}
		p, err := h.client.GetPayment(context.Background(), q.Get("paymentKey"))
		if err != nil {
			t.Fatalf("GetPayment: %v", err)
		}
		if p.Status != boxoffice.PaymentStatusInProgress || p.TotalAmount != 50000 || p.BalanceAmount != 50000 ||
			p.OrderID != "order-pay-1" || p.OrderName != "Concert, 2 seats" || p.Currency != "KRW" || p.ApprovedAt != nil {
			t.Fatalf("payment %+v, want IN_PROGRESS for 50000 KRW, not approved", p)
		}
		if _, off := p.RequestedAt.Zone(); off != 9*3600 {
			t.Errorf("requestedAt %v, want Korean time", p.RequestedAt)
		}
	})
	t.Run("SuccessURLKeepsItsQuery", func(t *testing.T) {
		form := checkoutForm("order-pay-2", 1000, "pay", "")
		form.Set("successUrl", successURL+"?lang=ko")
		resp := h.postCheckout(t, form)
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusSeeOther || loc.Query().Get("lang") != "ko" || loc.Query().Get("paymentKey") == "" {
			t.Fatalf("status %d Location %q, want 303 with lang=ko and paymentKey", resp.StatusCode, loc)
		}
	})
	t.Run("Decline", func(t *testing.T) {
		resp := h.postCheckout(t, checkoutForm("order-decline-1", 1000, "decline", ""))
		loc, _ := url.Parse(resp.Header.Get("Location"))
		q := loc.Query()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc.String(), failURL+"?") ||
			q.Get("code") != boxoffice.PGPayProcessCanceled || q.Get("orderId") != "order-decline-1" || q.Get("message") == "" {
			t.Fatalf("status %d Location %q, want 303 to failUrl with code PAY_PROCESS_CANCELED, message, orderId", resp.StatusCode, loc)
		}
		_, err := h.client.GetPaymentByOrderID(context.Background(), "order-decline-1")
		wantAPIError(t, err, http.StatusNotFound, boxoffice.PGNotFoundPayment)
	})
	invalid := []struct {
		name, field, value string
	}{
		{"OrderIDShort", "orderId", "abc12"},
		{"OrderIDLong", "orderId", strings.Repeat("a", 65)},
		{"OrderIDChars", "orderId", "order/123"},
		{"AmountZero", "amount", "0"},
		{"AmountNegative", "amount", "-5"},
		{"AmountNotNumber", "amount", "12.5"},
		{"OrderNameEmpty", "orderName", ""},
		{"SuccessURLRelative", "successUrl", "/payments/success"},
		{"FailURLScheme", "failUrl", "javascript:alert(1)"},
		{"ActionUnknown", "action", "steal"},
		{"ScenarioUnknown", "scenario", "explode"},
	}
	for _, tt := range invalid {
		t.Run("Invalid"+tt.name, func(t *testing.T) {
			form := checkoutForm("order-invalid-1", 1000, "pay", "")
			form.Set(tt.field, tt.value)
			resp := h.postCheckout(t, form)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			doc, err := goquery.NewDocumentFromReader(resp.Body)
			if err != nil {
				t.Fatalf("parse page: %v", err)
			}
			if doc.Find(`[data-testid="pg-errors"] li[data-field="`+tt.field+`"]`).Length() != 1 {
				t.Fatalf("page does not name %s as invalid", tt.field)
			}
		})
	}
}

// With ReturnOrigin set, as the app sets it to its BASE_URL, the checkout
// refuses to send the buyer anywhere else: no open redirect on the app's
// own address.
func TestSandbox_ReturnOrigin(t *testing.T) {
	h := newHarness(t, func(c *sandbox.Config) { c.ReturnOrigin = "https://shop.example" })
	for _, tt := range []struct{ name, field, value string }{
		{"OtherHost", "successUrl", "https://evil.example/payments/success"},
		{"OtherScheme", "failUrl", "http://shop.example/payments/fail"},
		{"OtherPort", "successUrl", "https://shop.example:8443/payments/success"},
		{"UserInfoTrick", "failUrl", "https://shop.example@evil.example/payments/fail"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			form := checkoutForm("order-origin-1", 1000, "pay", "")
			form.Set(tt.field, tt.value)
			resp := h.postCheckout(t, form)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s %s: status %d, want 400", tt.field, tt.value, resp.StatusCode)
			}
		})
	}
	resp := h.postCheckout(t, checkoutForm("order-origin-2", 1000, "pay", ""))
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, successURL+"?") {
		t.Fatalf("status %d Location %q, want 303 to %s", resp.StatusCode, loc, successURL)
	}
}

func TestSandbox_Authentication(t *testing.T) {
	h := newHarness(t)
	q := h.pay(t, "order-auth-1", 1000, "")
	key := q.Get("paymentKey")
	routes := []struct{ method, path string }{
		{http.MethodPost, "/v1/payments/confirm"},
		{http.MethodGet, "/v1/payments/" + key},
		{http.MethodGet, "/v1/payments/orders/order-auth-1"},
		{http.MethodPost, "/v1/payments/" + key + "/cancel"},
	}
	credentials := map[string]string{
		"None":         "",
		"WrongKey":     "test_sk_wrong:",
		"WithPassword": testSecret + ":secret",
	}
	for _, r := range routes {
		for name, cred := range credentials {
			t.Run(name+r.method+strings.ReplaceAll(r.path, "/", "_"), func(t *testing.T) {
				a := h.callAs(t, cred, r.method, r.path, "", confirmBody(key, "order-auth-1", 1000))
				if a.status != http.StatusUnauthorized || a.code() != boxoffice.PGUnauthorizedKey {
					t.Fatalf("answer %d %s, want 401 UNAUTHORIZED_KEY", a.status, a.body)
				}
			})
		}
	}
	t.Run("Client", func(t *testing.T) {
		c := *h.client
		c.SecretKey = "test_sk_wrong"
		_, err := c.GetPayment(context.Background(), key)
		wantAPIError(t, err, http.StatusUnauthorized, boxoffice.PGUnauthorizedKey)
		if boxoffice.IsPGTemporary(err) {
			t.Errorf("boxoffice.IsPGTemporary(UNAUTHORIZED_KEY) = true, want false")
		}
		if p, _ := h.client.GetPayment(context.Background(), key); p.Status != boxoffice.PaymentStatusInProgress {
			t.Errorf("status after refused calls %s, want IN_PROGRESS", p.Status)
		}
	})
}

func TestSandbox_Confirm(t *testing.T) {
	h := newHarness(t, func(c *sandbox.Config) {
		c.Now = func() time.Time { return time.Date(2026, 3, 1, 1, 2, 3, 456, time.UTC) }
	})
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		q := h.pay(t, "order-confirm-1", 77000, "")
		p, err := h.client.Confirm(ctx, q.Get("paymentKey"), "order-confirm-1", won(77000))
		if err != nil {
			t.Fatalf("Confirm: %v", err)
		}
		want := time.Date(2026, 3, 1, 10, 2, 3, 0, time.FixedZone("", 9*3600))
		if p.Status != boxoffice.PaymentStatusDone || p.TotalAmount != 77000 || p.BalanceAmount != 77000 ||
			p.ApprovedAt == nil || !p.ApprovedAt.Equal(want) || p.PaymentKey != q.Get("paymentKey") {
			t.Fatalf("confirmed payment %+v, want DONE for 77000 approved at %v", p, want)
		}
		if got := p.ApprovedAt.Format(time.RFC3339); got != "2026-03-01T10:02:03+09:00" {
			t.Errorf("approvedAt %s, want Toss's form 2026-03-01T10:02:03+09:00", got)
		}
		got, err := h.client.GetPayment(ctx, p.PaymentKey)
		if err != nil || got.Status != boxoffice.PaymentStatusDone {
			t.Fatalf("GetPayment after confirm: %+v, %v; want DONE", got, err)
		}
	})
	q := h.pay(t, "order-confirm-2", 30000, "")
	key := q.Get("paymentKey")
	refused := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"WrongAmount", confirmBody(key, "order-confirm-2", 29999), 400, boxoffice.PGInvalidRequest},
		{"WrongOrderID", confirmBody(key, "order-confirm-3", 30000), 400, boxoffice.PGInvalidRequest},
		{"UnknownKey", confirmBody("tsbxUNKNOWN", "order-confirm-2", 30000), 404, boxoffice.PGNotFoundPayment},
		{"NoAmount", map[string]any{"paymentKey": key, "orderId": "order-confirm-2"}, 400, boxoffice.PGInvalidRequest},
		{"AmountAsText", map[string]any{"paymentKey": key, "orderId": "order-confirm-2", "amount": "30000"}, 400, boxoffice.PGInvalidRequest},
		{"NotJSON", "paymentKey=" + key, 400, boxoffice.PGInvalidRequest},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			a := h.call(t, http.MethodPost, "/v1/payments/confirm", "", tt.body)
			if a.status != tt.status || a.code() != tt.code {
				t.Fatalf("answer %d %s, want %d %s", a.status, a.body, tt.status, tt.code)
			}
		})
	}
	t.Run("RefusalsChangeNothing", func(t *testing.T) {
		p, err := h.client.GetPayment(ctx, key)
		if err != nil || p.Status != boxoffice.PaymentStatusInProgress {
			t.Fatalf("payment %+v, %v; want still IN_PROGRESS", p, err)
		}
	})
	t.Run("AlreadyProcessed", func(t *testing.T) {
		if a := h.call(t, http.MethodPost, "/v1/payments/confirm", "", confirmBody(key, "order-confirm-2", 30000)); a.status != 200 {
			t.Fatalf("first confirm %d %s, want 200", a.status, a.body)
		}
		a := h.call(t, http.MethodPost, "/v1/payments/confirm", "", confirmBody(key, "order-confirm-2", 30000))
		if a.status != 400 || a.code() != boxoffice.PGAlreadyProcessedPayment {
			t.Fatalf("second confirm %d %s, want 400 ALREADY_PROCESSED_PAYMENT", a.status, a.body)
		}
		_, err := h.client.Confirm(ctx, key, "order-confirm-2", won(30000))
		wantAPIError(t, err, 400, boxoffice.PGAlreadyProcessedPayment)
		if !boxoffice.IsPGCode(err, boxoffice.PGAlreadyProcessedPayment) || boxoffice.IsPGTemporary(err) {
			t.Errorf("IsCode/IsTemporary wrong for %v", err)
		}
	})
}

func TestSandbox_LookUp(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	first := h.pay(t, "order-lookup-1", 10000, "").Get("paymentKey")
	second := h.pay(t, "order-lookup-1", 10000, "").Get("paymentKey")
	if first == second {
		t.Fatalf("two checkouts got one paymentKey %s", first)
	}
	t.Run("ByKey", func(t *testing.T) {
		p, err := h.client.GetPayment(ctx, first)
		if err != nil || p.PaymentKey != first {
			t.Fatalf("GetPayment(%s) = %+v, %v", first, p, err)
		}
	})
	t.Run("ByOrderIDLatest", func(t *testing.T) {
		p, err := h.client.GetPaymentByOrderID(ctx, "order-lookup-1")
		if err != nil || p.PaymentKey != second {
			t.Fatalf("GetPaymentByOrderID = %+v, %v; want the latest payment %s", p, err, second)
		}
	})
	t.Run("UnknownKey", func(t *testing.T) {
		_, err := h.client.GetPayment(ctx, "tsbx-no-such/key")
		wantAPIError(t, err, http.StatusNotFound, boxoffice.PGNotFoundPayment)
		if !boxoffice.IsPGCode(err, boxoffice.PGNotFoundPayment) || boxoffice.IsPGTemporary(err) {
			t.Errorf("IsCode/IsTemporary wrong for %v", err)
		}
	})
	t.Run("UnknownOrder", func(t *testing.T) {
		_, err := h.client.GetPaymentByOrderID(ctx, "order-lookup-none")
		wantAPIError(t, err, http.StatusNotFound, boxoffice.PGNotFoundPayment)
	})
}

func TestSandbox_Cancel(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	confirmed := func(t *testing.T, orderID string, amount int64) string {
		t.Helper()
		key := h.pay(t, orderID, amount, "").Get("paymentKey")
		if _, err := h.client.Confirm(ctx, key, orderID, won(amount)); err != nil {
			t.Fatalf("Confirm: %v", err)
		}
		return key
	}
	t.Run("OK", func(t *testing.T) {
		key := confirmed(t, "order-cancel-1", 45000)
		p, err := h.client.Cancel(ctx, key, boxoffice.CancelRequest{Reason: "Seat sold to another buyer"})
		if err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		if p.Status != boxoffice.PaymentStatusCanceled || p.BalanceAmount != 0 || p.TotalAmount != 45000 || len(p.Cancels) != 1 {
			t.Fatalf("cancelled payment %+v, want CANCELED with balance 0 and one cancel", p)
		}
		c := p.Cancels[0]
		if c.CancelAmount != 45000 || c.CancelReason != "Seat sold to another buyer" || c.CancelStatus != "DONE" ||
			c.TransactionKey == "" || c.CanceledAt.IsZero() {
			t.Fatalf("cancel entry %+v", c)
		}
		got, err := h.client.GetPayment(ctx, key)
		if err != nil || got.Status != boxoffice.PaymentStatusCanceled || len(got.Cancels) != 1 || got.Cancels[0].CancelAmount != 45000 {
			t.Fatalf("GetPayment after cancel: %+v, %v", got, err)
		}
		again := h.call(t, http.MethodPost, "/v1/payments/"+key+"/cancel", "", map[string]any{"cancelReason": "again"})
		if again.status != 400 || again.code() != boxoffice.PGAlreadyCanceledPayment {
			t.Fatalf("second cancel %d %s, want 400 ALREADY_CANCELED_PAYMENT", again.status, again.body)
		}
		h.sb.Wait()
		if got := statuses(h.recv.events(key)); !slices.Equal(got, []string{"DONE", "CANCELED"}) &&
			!slices.Equal(got, []string{"CANCELED", "DONE"}) {
			t.Fatalf("webhooks %v, want one DONE and one CANCELED", got)
		}
	})
	t.Run("NotConfirmed", func(t *testing.T) {
		key := h.pay(t, "order-cancel-2", 1000, "").Get("paymentKey")
		_, err := h.client.Cancel(ctx, key, boxoffice.CancelRequest{Reason: "changed my mind"})
		wantAPIError(t, err, http.StatusForbidden, boxoffice.PGNotCancelablePayment)
	})
	t.Run("Unknown", func(t *testing.T) {
		_, err := h.client.Cancel(ctx, "tsbxUNKNOWN", boxoffice.CancelRequest{Reason: "why"})
		wantAPIError(t, err, http.StatusNotFound, boxoffice.PGNotFoundPayment)
	})
	t.Run("NoReason", func(t *testing.T) {
		key := confirmed(t, "order-cancel-3", 1000)
		a := h.call(t, http.MethodPost, "/v1/payments/"+key+"/cancel", "", map[string]any{"cancelReason": ""})
		if a.status != http.StatusBadRequest || a.code() != boxoffice.PGInvalidRequest {
			t.Fatalf("cancel without a reason %d %s, want 400 INVALID_REQUEST", a.status, a.body)
		}
		// The client refuses it before any call.
		_, err := h.client.Cancel(ctx, key, boxoffice.CancelRequest{Reason: ""})
		if boxoffice.ErrorCode(err) != boxoffice.EBADREQUEST {
			t.Fatalf("Cancel without a reason: %v, want EBADREQUEST", err)
		}
		if p, _ := h.client.GetPayment(ctx, key); p.Status != boxoffice.PaymentStatusDone {
			t.Fatalf("status %s after a refused cancel, want DONE", p.Status)
		}
	})
	t.Run("PartialAmount", func(t *testing.T) {
		key := confirmed(t, "order-cancel-4", 3000)
		for _, amount := range []int64{0, -1, 3001} {
			a := h.call(t, http.MethodPost, "/v1/payments/"+key+"/cancel", "", map[string]any{"cancelReason": "too much", "cancelAmount": amount})
			if a.status != http.StatusForbidden || a.code() != boxoffice.PGNotCancelableAmount {
				t.Fatalf("cancel of %d %d %s, want 403 NOT_CANCELABLE_AMOUNT", amount, a.status, a.body)
			}
		}
		a := h.call(t, http.MethodPost, "/v1/payments/"+key+"/cancel", "", map[string]any{"cancelReason": "dollars", "cancelAmount": 1000, "currency": "USD"})
		if a.status != http.StatusBadRequest || a.code() != boxoffice.PGInvalidRequest {
			t.Fatalf("cancel in USD %d %s, want 400 INVALID_REQUEST", a.status, a.body)
		}
		// One seat of three through the client, twice with the same refund id:
		// refunded once.
		one := boxoffice.CancelRequest{Reason: "one seat", Amount: &boxoffice.Money{Amount: 1000, Currency: "KRW"}, RefundID: "refund-1"}
		for range 2 {
			p, err := h.client.Cancel(ctx, key, one)
			if err != nil || p.Status != boxoffice.PaymentStatusPartialCanceled || p.BalanceAmount != 2000 || len(p.Cancels) != 1 {
				t.Fatalf("partial cancel: %+v, %v; want PARTIAL_CANCELED, balance 2000, one cancel", p, err)
			}
		}
		if _, err := h.client.Cancel(ctx, key, boxoffice.CancelRequest{Reason: "no id", Amount: one.Amount}); boxoffice.ErrorCode(err) != boxoffice.EBADREQUEST {
			t.Fatalf("partial cancel without a refund id: %v, want EBADREQUEST", err)
		}
		two := one
		two.RefundID = "refund-2"
		if p, err := h.client.Cancel(ctx, key, two); err != nil || p.BalanceAmount != 1000 || len(p.Cancels) != 2 {
			t.Fatalf("second partial cancel: %+v, %v; want balance 1000, two cancels", p, err)
		}
		p, err := h.client.Cancel(ctx, key, boxoffice.CancelRequest{Reason: "the rest"})
		if err != nil || p.Status != boxoffice.PaymentStatusCanceled || p.BalanceAmount != 0 || len(p.Cancels) != 3 || p.Cancels[2].CancelAmount != 1000 {
			t.Fatalf("cancel of the rest: %+v, %v; want CANCELED, balance 0, the third cancel of 1000", p, err)
		}
		_, err = h.client.Cancel(ctx, key, boxoffice.CancelRequest{Reason: "again", Amount: one.Amount, RefundID: "refund-3"})
		wantAPIError(t, err, http.StatusBadRequest, boxoffice.PGAlreadyCanceledPayment)
	})
	// Partial refunds of one payment at once, each with its own refund id:
	// the balance never goes below 0 and every refund that succeeded is one
	// entry in cancels.
	t.Run("ConcurrentPartial", func(t *testing.T) {
		key := confirmed(t, "order-cancel-p", 5000)
		var ok atomic.Int64
		concurrently(50, func(i int) apiAnswer {
			r := boxoffice.CancelRequest{Reason: "seat", Amount: &boxoffice.Money{Amount: 1000, Currency: "KRW"}, RefundID: fmt.Sprintf("r%d", i)}
			if _, err := h.client.Cancel(ctx, key, r); err == nil {
				ok.Add(1)
			} else if !boxoffice.IsPGCode(err, boxoffice.PGAlreadyCanceledPayment) && !boxoffice.IsPGCode(err, boxoffice.PGNotCancelableAmount) {
				t.Errorf("partial cancel %d: %v", i, err)
			}
			return apiAnswer{}
		})
		p, err := h.client.GetPayment(ctx, key)
		if err != nil || ok.Load() != 5 || p.BalanceAmount != 0 || p.Status != boxoffice.PaymentStatusCanceled || len(p.Cancels) != 5 {
			t.Fatalf("%d partial cancels succeeded, payment %+v (%v); want 5, balance 0, CANCELED, 5 cancels", ok.Load(), p, err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		for round := range 3 {
			orderID := fmt.Sprintf("order-cancel-c%d", round)
			key := confirmed(t, orderID, 2000)
			answers := concurrently(100, func(int) apiAnswer {
				return h.call(t, http.MethodPost, "/v1/payments/"+key+"/cancel", "", map[string]any{"cancelReason": "refund"})
			})
			if n := countAnswers(answers, 200, ""); n != 1 {
				t.Fatalf("round %d: %d cancels succeeded, want 1", round, n)
			}
			if n := countAnswers(answers, 400, boxoffice.PGAlreadyCanceledPayment); n != 99 {
				t.Fatalf("round %d: %d ALREADY_CANCELED_PAYMENT, want 99", round, n)
			}
			p, _ := h.client.GetPayment(ctx, key)
			if len(p.Cancels) != 1 {
				t.Fatalf("round %d: %d cancel entries, want 1", round, len(p.Cancels))
			}
		}
	})
}

// concurrently runs fn(i) for i in [0, n) at once and returns the answers.
func concurrently(n int, fn func(i int) apiAnswer) []apiAnswer {
	out := make([]apiAnswer, n)
	storetest.AtOnce(n, func(i int) { out[i] = fn(i) })
	return out
}

// countAnswers counts the answers with this status and error code ("" for success).
func countAnswers(answers []apiAnswer, status int, code string) int {
	n := 0
	for _, a := range answers {
		if a.status == status && a.code() == code {
			n++
		}
	}
	return n
}

func TestSandbox_ConcurrentConfirm(t *testing.T) {
	h := newHarness(t)
	const goroutines, rounds = 100, 4
	for _, scenario := range []string{sandbox.ScenarioDefault, sandbox.ScenarioWebhookTwice} {
		for round := range rounds {
			orderID := fmt.Sprintf("order-race-%s-%d", scenario, round)
			key := h.pay(t, orderID, 12000, scenario).Get("paymentKey")
			answers := concurrently(goroutines, func(int) apiAnswer {
				return h.call(t, http.MethodPost, "/v1/payments/confirm", "", confirmBody(key, orderID, 12000))
			})
			if n := countAnswers(answers, 200, ""); n != 1 {
				t.Fatalf("%s round %d: %d confirms answered DONE, want exactly 1", scenario, round, n)
			}
			if n := countAnswers(answers, 400, boxoffice.PGAlreadyProcessedPayment); n != goroutines-1 {
				t.Fatalf("%s round %d: %d answered ALREADY_PROCESSED_PAYMENT, want %d", scenario, round, n, goroutines-1)
			}
			h.sb.Wait()
			want := []string{"DONE"}
			if scenario == sandbox.ScenarioWebhookTwice {
				want = []string{"DONE", "DONE"}
			}
			if got := statuses(h.recv.events(key)); !slices.Equal(got, want) {
				t.Fatalf("%s round %d: webhooks %v, want %v", scenario, round, got, want)
			}
		}
	}
}

func TestSandbox_Idempotency(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	t.Run("Replay", func(t *testing.T) {
		key := h.pay(t, "order-idem-1", 5000, "").Get("paymentKey")
		first := h.call(t, http.MethodPost, "/v1/payments/confirm", "k-1", confirmBody(key, "order-idem-1", 5000))
		again := h.call(t, http.MethodPost, "/v1/payments/confirm", "k-1", confirmBody(key, "order-idem-1", 5000))
		if first.status != 200 || again.status != 200 || string(first.body) != string(again.body) {
			t.Fatalf("answers %d %s and %d %s, want the same 200 twice", first.status, first.body, again.status, again.body)
		}
		other := h.call(t, http.MethodPost, "/v1/payments/confirm", "k-2", confirmBody(key, "order-idem-1", 5000))
		if other.status != 400 || other.code() != boxoffice.PGAlreadyProcessedPayment {
			t.Fatalf("another key: %d %s, want 400 ALREADY_PROCESSED_PAYMENT", other.status, other.body)
		}
		// The key is scoped to method and path: the same key on cancel is a new call.
		cancel := h.call(t, http.MethodPost, "/v1/payments/"+key+"/cancel", "k-1", map[string]any{"cancelReason": "test"})
		if cancel.status != 200 || cancel.payment(t).Status != boxoffice.PaymentStatusCanceled {
			t.Fatalf("cancel with the confirm's key: %d %s, want 200 CANCELED", cancel.status, cancel.body)
		}
		// A replay is the first answer, even when the payment moved on since.
		stale := h.call(t, http.MethodPost, "/v1/payments/confirm", "k-1", confirmBody(key, "order-idem-1", 5000))
		if string(stale.body) != string(first.body) {
			t.Fatalf("replay after cancel %s, want the first answer %s", stale.body, first.body)
		}
	})
	t.Run("ReplaysErrors", func(t *testing.T) {
		key := h.pay(t, "order-idem-2", 5000, "").Get("paymentKey")
		bad := h.call(t, http.MethodPost, "/v1/payments/confirm", "k-3", confirmBody(key, "order-idem-2", 1))
		again := h.call(t, http.MethodPost, "/v1/payments/confirm", "k-3", confirmBody(key, "order-idem-2", 5000))
		if bad.code() != boxoffice.PGInvalidRequest || again.status != bad.status || string(again.body) != string(bad.body) {
			t.Fatalf("answers %s then %s, want INVALID_REQUEST replayed", bad.body, again.body)
		}
	})
	t.Run("KeyLength", func(t *testing.T) {
		key := h.pay(t, "order-idem-3", 5000, "").Get("paymentKey")
		long := h.call(t, http.MethodPost, "/v1/payments/confirm", strings.Repeat("k", 301), confirmBody(key, "order-idem-3", 5000))
		if long.status != 400 || long.code() != boxoffice.PGInvalidRequest {
			t.Fatalf("301-character key: %d %s, want 400 INVALID_REQUEST", long.status, long.body)
		}
		ok := h.call(t, http.MethodPost, "/v1/payments/confirm", strings.Repeat("k", 300), confirmBody(key, "order-idem-3", 5000))
		if ok.status != 200 {
			t.Fatalf("300-character key: %d %s, want 200", ok.status, ok.body)
		}
	})
	t.Run("ClientKeysPerOperation", func(t *testing.T) {
		keys := []string{h.pay(t, "order-idem-4", 5000, "").Get("paymentKey"), h.pay(t, "order-idem-4", 5000, "").Get("paymentKey")}
		for _, k := range keys {
			if _, err := h.client.Confirm(ctx, k, "order-idem-4", won(5000)); err != nil {
				t.Fatalf("Confirm(%s): %v", k, err)
			}
			if _, err := h.client.Cancel(ctx, k, boxoffice.CancelRequest{Reason: "two tabs"}); err != nil {
				t.Fatalf("Cancel(%s): %v", k, err)
			}
		}
		rows, err := h.db.Pool.Query(ctx, `SELECT idempotency_key FROM sandbox_pg.sandbox_pg_idempotency ORDER BY created_at, idempotency_key`)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var k string
			rows.Scan(&k)
			if strings.HasSuffix(k, keys[0]) || strings.HasSuffix(k, keys[1]) {
				got = append(got, k)
			}
		}
		want := []string{"cancel:" + keys[0], "cancel:" + keys[1], "confirm:order-idem-4:" + keys[0], "confirm:order-idem-4:" + keys[1]}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("idempotency keys %q, want %q", got, want)
		}
	})
	t.Run("ConcurrentSameKey", func(t *testing.T) {
		for round := range 3 {
			orderID := fmt.Sprintf("order-idem-c%d", round)
			key := h.pay(t, orderID, 8000, "").Get("paymentKey")
			answers := concurrently(100, func(int) apiAnswer {
				return h.call(t, http.MethodPost, "/v1/payments/confirm", "confirm:"+key, confirmBody(key, orderID, 8000))
			})
			for i, a := range answers {
				if a.status != 200 || string(a.body) != string(answers[0].body) {
					t.Fatalf("round %d answer %d: %d %s, want every answer the same 200 as %s", round, i, a.status, a.body, answers[0].body)
				}
			}
			h.sb.Wait()
			if got := statuses(h.recv.events(key)); !slices.Equal(got, []string{"DONE"}) {
				t.Fatalf("round %d: webhooks %v, want one DONE", round, got)
			}
		}
	})
	// Partial cancels under one key, at once, cancel once: every repeat
	// waits for the first and replays its answer.
	t.Run("ConcurrentSameKeyCancel", func(t *testing.T) {
		const goroutines, rounds = 200, 5
		for round := range rounds {
			orderID := fmt.Sprintf("order-idem-cc%d", round)
			key := h.pay(t, orderID, 8000, "").Get("paymentKey")
			mustConfirm(t, h, key, orderID, 8000)
			answers := concurrently(goroutines, func(int) apiAnswer {
				return h.call(t, http.MethodPost, "/v1/payments/"+key+"/cancel", "cancel:"+key,
					map[string]any{"cancelReason": "one seat", "cancelAmount": 1000})
			})
			for i, a := range answers {
				if a.status != 200 || string(a.body) != string(answers[0].body) {
					t.Fatalf("round %d answer %d: %d %s, want every answer the same 200 as %s", round, i, a.status, a.body, answers[0].body)
				}
			}
			p := h.call(t, http.MethodGet, "/v1/payments/"+key, "", nil).payment(t)
			if p.Status != boxoffice.PaymentStatusPartialCanceled || p.BalanceAmount != 7000 || len(p.Cancels) != 1 {
				t.Fatalf("round %d: %s, balance %d, %d cancels; want PARTIAL_CANCELED, 7000, 1", round, p.Status, p.BalanceAmount, len(p.Cancels))
			}
			h.sb.Wait()
			wantWebhooks(t, h, key, "DONE", "PARTIAL_CANCELED")
		}
	})
}

func TestSandbox_Scenarios(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tests := []struct {
		scenario string
		check    func(t *testing.T, orderID string, q url.Values)
	}{
		{sandbox.ScenarioDefault, func(t *testing.T, orderID string, q url.Values) {
			key := q.Get("paymentKey")
			mustConfirm(t, h, key, orderID, 20000)
			mustCancel(t, h, key)
			h.sb.Wait()
			wantWebhooks(t, h, key, "DONE", "CANCELED")
		}},
		{sandbox.ScenarioWebhookTwice, func(t *testing.T, orderID string, q url.Values) {
			key := q.Get("paymentKey")
			mustConfirm(t, h, key, orderID, 20000)
			h.sb.Wait()
			wantWebhooks(t, h, key, "DONE", "DONE")
		}},
		{sandbox.ScenarioWebhookLate, func(t *testing.T, orderID string, q url.Values) {
			key := q.Get("paymentKey")
			confirmedAt := time.Now()
			mustConfirm(t, h, key, orderID, 20000)
			h.sb.Wait()
			evs := h.recv.events(key)
			wantWebhooks(t, h, key, "DONE")
			if late := evs[0].at.Sub(confirmedAt); late < h.cfg.LateDelay {
				t.Fatalf("webhook came %v after the confirm, want at least LateDelay %v", late, h.cfg.LateDelay)
			}
		}},
		{sandbox.ScenarioWebhookBeforeRedirect, func(t *testing.T, orderID string, q url.Values) {
			key := q.Get("paymentKey")
			// h.pay returned after the redirect: the webhook is in already.
			wantWebhooks(t, h, key, "DONE")
			p, err := h.client.GetPayment(ctx, key)
			if err != nil || p.Status != boxoffice.PaymentStatusDone {
				t.Fatalf("payment before the app's confirm: %+v, %v; want DONE", p, err)
			}
			_, err = h.client.Confirm(ctx, key, orderID, won(20000))
			wantAPIError(t, err, http.StatusBadRequest, boxoffice.PGAlreadyProcessedPayment)
		}},
		{sandbox.ScenarioWebhookNever, func(t *testing.T, orderID string, q url.Values) {
			key := q.Get("paymentKey")
			mustConfirm(t, h, key, orderID, 20000)
			mustCancel(t, h, key)
			h.sb.Wait()
			wantWebhooks(t, h, key)
		}},
		{sandbox.ScenarioTamperAmount, func(t *testing.T, orderID string, q url.Values) {
			key := q.Get("paymentKey")
			if amountOf(t, q) == 20000 {
				t.Fatalf("redirect amount %s, want it changed", q.Get("amount"))
			}
			p, _ := h.client.GetPayment(ctx, key)
			if p.TotalAmount != 20000 {
				t.Fatalf("payment amount %d, want the real 20000", p.TotalAmount)
			}
			_, err := h.client.Confirm(ctx, key, orderID, won(amountOf(t, q)))
			wantAPIError(t, err, http.StatusBadRequest, boxoffice.PGInvalidRequest)
		}},
		{sandbox.ScenarioPayLess, func(t *testing.T, orderID string, q url.Values) {
			key := q.Get("paymentKey")
			p, _ := h.client.GetPayment(ctx, key)
			if amountOf(t, q) != 19000 || p.TotalAmount != 19000 {
				t.Fatalf("redirect amount %s, payment amount %d; want both 19000", q.Get("amount"), p.TotalAmount)
			}
			_, err := h.client.Confirm(ctx, key, orderID, won(20000))
			wantAPIError(t, err, http.StatusBadRequest, boxoffice.PGInvalidRequest)
		}},
		{sandbox.ScenarioRejectCard, func(t *testing.T, orderID string, q url.Values) {
			key := q.Get("paymentKey")
			_, err := h.client.Confirm(ctx, key, orderID, won(20000))
			wantAPIError(t, err, http.StatusBadRequest, boxoffice.PGInvalidRejectCard)
			if boxoffice.IsPGTemporary(err) {
				t.Errorf("boxoffice.IsPGTemporary(INVALID_REJECT_CARD) = true, want false")
			}
			p, _ := h.client.GetPayment(ctx, key)
			if p.Status != boxoffice.PaymentStatusAborted || p.Failure == nil || p.Failure.Code != boxoffice.PGInvalidRejectCard || p.ApprovedAt != nil {
				t.Fatalf("payment %+v, want ABORTED with failure INVALID_REJECT_CARD", p)
			}
			again := h.call(t, http.MethodPost, "/v1/payments/confirm", "", confirmBody(key, orderID, 20000))
			if again.code() != boxoffice.PGAlreadyProcessedPayment {
				t.Fatalf("confirm of an aborted payment: %s, want ALREADY_PROCESSED_PAYMENT", again.body)
			}
			_, err = h.client.Cancel(ctx, key, boxoffice.CancelRequest{Reason: "refund"})
			wantAPIError(t, err, http.StatusForbidden, boxoffice.PGNotCancelablePayment)
			h.sb.Wait()
			wantWebhooks(t, h, key, "ABORTED")
		}},
	}
	for i, tt := range tests {
		name := tt.scenario
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			orderID := fmt.Sprintf("order-scenario-%d", i)
			tt.check(t, orderID, h.pay(t, orderID, 20000, tt.scenario))
		})
	}
	t.Run("SmallAmounts", func(t *testing.T) {
		q := h.pay(t, "order-small-1", 500, sandbox.ScenarioPayLess)
		if amountOf(t, q) != 1 {
			t.Errorf("pay_less of 500: redirect amount %s, want 1", q.Get("amount"))
		}
		q = h.pay(t, "order-small-2", 1000, sandbox.ScenarioTamperAmount)
		if amountOf(t, q) == 1000 || amountOf(t, q) <= 0 {
			t.Errorf("tamper_amount of 1000: redirect amount %s, want another positive amount", q.Get("amount"))
		}
	})
}

func mustConfirm(t *testing.T, h *harness, key, orderID string, amount int64) {
	t.Helper()
	if _, err := h.client.Confirm(context.Background(), key, orderID, won(amount)); err != nil {
		t.Fatalf("Confirm: %v", err)
	}
}

func mustCancel(t *testing.T, h *harness, key string) {
	t.Helper()
	if _, err := h.client.Cancel(context.Background(), key, boxoffice.CancelRequest{Reason: "test refund"}); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
}

// wantWebhooks checks the statuses of the payment's delivered webhooks, in
// any order, and that each carries the payment as the API reports it.
func wantWebhooks(t *testing.T, h *harness, key string, want ...string) {
	t.Helper()
	evs := h.recv.events(key)
	got := statuses(evs)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("webhooks of %s: %v, want %v", key, got, want)
	}
	for _, e := range evs {
		if e.event.EventType != toss.EventPaymentStatusChanged || e.event.Data.OrderID == "" {
			t.Fatalf("webhook %+v", e.event)
		}
		if _, err := time.Parse(toss.WebhookCreatedAtLayout, e.event.CreatedAt); err != nil {
			t.Fatalf("webhook createdAt %q: %v", e.event.CreatedAt, err)
		}
	}
}

func TestSandbox_WebhookRetries(t *testing.T) {
	t.Run("RetriedUntil2xx", func(t *testing.T) {
		h := newHarness(t)
		h.recv.failFirst = 2
		key := h.pay(t, "order-retry-1", 1000, "").Get("paymentKey")
		mustConfirm(t, h, key, "order-retry-1", 1000)
		h.sb.Wait()
		wantWebhooks(t, h, key, "DONE")
		if n := h.recv.callCount(); n != 3 {
			t.Fatalf("%d webhook requests, want 3 (two 500s, then 200)", n)
		}
		wantDeliveryRow(t, h, key, 3, true, false)
	})
	t.Run("GivenUpAfterRetries", func(t *testing.T) {
		h := newHarness(t)
		h.recv.failFirst = 100
		key := h.pay(t, "order-retry-2", 1000, "").Get("paymentKey")
		mustConfirm(t, h, key, "order-retry-2", 1000)
		h.sb.Wait()
		if n := h.recv.callCount(); n != 1+len(h.cfg.RetryDelays) {
			t.Fatalf("%d webhook requests, want %d (one and every retry)", n, 1+len(h.cfg.RetryDelays))
		}
		wantDeliveryRow(t, h, key, 1+len(h.cfg.RetryDelays), false, true)
	})
	t.Run("NetworkError", func(t *testing.T) {
		closed := newReceiver(t)
		closed.srv.Close()
		h := newHarness(t, func(c *sandbox.Config) { c.WebhookURL = closed.srv.URL })
		key := h.pay(t, "order-retry-3", 1000, "").Get("paymentKey")
		mustConfirm(t, h, key, "order-retry-3", 1000)
		h.sb.Wait()
		wantDeliveryRow(t, h, key, 1+len(h.cfg.RetryDelays), false, true)
	})
	t.Run("NoRetry", func(t *testing.T) {
		h := newHarness(t, func(c *sandbox.Config) { c.RetryDelays = []time.Duration{} })
		h.recv.failFirst = 1
		key := h.pay(t, "order-retry-4", 1000, "").Get("paymentKey")
		mustConfirm(t, h, key, "order-retry-4", 1000)
		h.sb.Wait()
		wantDeliveryRow(t, h, key, 1, false, true)
	})
}

// wantDeliveryRow checks the stored state of the payment's one webhook.
func wantDeliveryRow(t *testing.T, h *harness, key string, attempts int, delivered, failed bool) {
	t.Helper()
	var gotAttempts int
	var gotDelivered, gotFailed bool
	err := h.db.Pool.QueryRow(context.Background(), `SELECT attempts, delivered_at IS NOT NULL, failed_at IS NOT NULL
		FROM sandbox_pg.sandbox_pg_webhook WHERE payment_key = $1`, key).Scan(&gotAttempts, &gotDelivered, &gotFailed)
	if err != nil {
		t.Fatalf("read delivery: %v", err)
	}
	if gotAttempts != attempts || gotDelivered != delivered || gotFailed != failed {
		t.Fatalf("delivery: attempts %d delivered %v failed %v; want %d %v %v",
			gotAttempts, gotDelivered, gotFailed, attempts, delivered, failed)
	}
}

// TestSandbox_WebhookSurvivesRestart stops a sandbox while a webhook is in
// flight, as when the process dies, and checks that the next instance on the
// same database delivers it.
func TestSandbox_WebhookSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	h.recv.hangFirst = 1
	key := h.pay(t, "order-restart-1", 1000, "").Get("paymentKey")
	mustConfirm(t, h, key, "order-restart-1", 1000)
	<-h.recv.hanging // the first attempt is in flight
	if err := h.sb.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantWebhooks(t, h, key)
	next := h.startSandbox(t)
	next.Wait()
	wantWebhooks(t, h, key, "DONE")
	wantDeliveryRow(t, h, key, 1, true, false)
}

// TestSandbox_WebhookSurvivesDatabaseOutage stops the sandbox's database
// while a webhook waits for its time (a late one) and starts it again: the
// delivery waits for the database and then goes out, as a PG's retries
// outlast its outages.
func TestSandbox_WebhookSurvivesDatabaseOutage(t *testing.T) {
	pg := storetest.StartPostgres(t)
	db := pg.MustOpenDB()
	logged := &logWatch{lines: make(chan string, 100)}
	h := newHarnessOn(t, db, func(c *sandbox.Config) {
		c.LateDelay = time.Second
		c.Logger = slog.New(slog.NewTextHandler(logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	key := h.pay(t, "order-outage-1", 1000, sandbox.ScenarioWebhookLate).Get("paymentKey")
	mustConfirm(t, h, key, "order-outage-1", 1000)
	pg.Stop()
	select { // the delivery met the database down
	case <-logged.lines:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery logged no database error with the database down")
	}
	wantWebhooks(t, h, key)
	pg.Start()
	h.sb.Wait()
	wantWebhooks(t, h, key, "DONE")
	wantDeliveryRow(t, h, key, 1, true, false)
}

// logWatch is a log's writer that passes each line on to lines (dropping
// lines when nobody reads).
type logWatch struct{ lines chan string }

func (w *logWatch) Write(p []byte) (int, error) {
	select {
	case w.lines <- string(p):
	default:
	}
	return len(p), nil
}
