package toss_test

import (
	"github.com/boxoffice/boxoffice"

	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/payment/toss"
)

const testSecret = "test_sk_sandbox"

func won(amount int64) boxoffice.Money { return boxoffice.Money{Amount: amount, Currency: "KRW"} }

func TestClient_CheckoutURL(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:8080/sandbox-pg", "http://127.0.0.1:8080/sandbox-pg/"} {
		c := toss.Client{BaseURL: base}
		raw := c.CheckoutURL(boxoffice.CheckoutRequest{OrderID: "order_A-1", Amount: won(154000), OrderName: "R석 2매 & more", SuccessURL: "https://x.example/s?a=1", FailURL: "https://x.example/f"})
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("CheckoutURL %q: %v", raw, err)
		}
		if u.Path != "/sandbox-pg/checkout" {
			t.Errorf("path %q, want /sandbox-pg/checkout", u.Path)
		}
		want := url.Values{"orderId": {"order_A-1"}, "amount": {"154000"}, "currency": {"KRW"}, "orderName": {"R석 2매 & more"},
			"successUrl": {"https://x.example/s?a=1"}, "failUrl": {"https://x.example/f"}}
		if got := u.Query(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("query %v, want %v", got, want)
		}
	}
}

// TestClient_AnswersTheSandboxNeverGives checks how the client reads answers
// a real PG or a proxy in front of it may give.
func TestClient_AnswersTheSandboxNeverGives(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		code      string // "" when the answer is not an *boxoffice.PGError
		temporary bool
	}{
		{"ProxyPage", http.StatusBadGateway, "<html>502 Bad Gateway</html>", "", true},
		{"ProviderError", http.StatusBadRequest, `{"code":"PROVIDER_ERROR","message":"temporary"}`, boxoffice.PGProviderError, true},
		{"ServerError", http.StatusInternalServerError, `{"code":"FAILED_INTERNAL_SYSTEM_PROCESSING","message":"x"}`, "FAILED_INTERNAL_SYSTEM_PROCESSING", true},
		{"TooManyRequests", http.StatusTooManyRequests, `{"code":"TOO_MANY_REQUESTS","message":"x"}`, "TOO_MANY_REQUESTS", true},
		{"StoppedCard", http.StatusBadRequest, `{"code":"INVALID_STOPPED_CARD","message":"x"}`, boxoffice.PGInvalidStoppedCard, false},
		{"UnreadablePayment", http.StatusOK, `{"paymentKey":`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			c := toss.Client{BaseURL: srv.URL, SecretKey: testSecret}
			p, err := c.Confirm(context.Background(), "pk", "order-1", won(1000))
			if p != nil || err == nil {
				t.Fatalf("Confirm = %+v, %v; want an error", p, err)
			}
			var apiErr *boxoffice.PGError
			if isAPI := errors.As(err, &apiErr); isAPI != (tt.status != http.StatusOK) {
				t.Fatalf("error %v: *boxoffice.PGError %v, want %v", err, isAPI, tt.status != http.StatusOK)
			}
			if apiErr != nil && (apiErr.Status != tt.status || apiErr.Code != tt.code) {
				t.Fatalf("boxoffice.PGError %+v, want status %d code %q", apiErr, tt.status, tt.code)
			}
			if got := boxoffice.IsPGTemporary(err); got != tt.temporary {
				t.Fatalf("boxoffice.IsPGTemporary(%v) = %v, want %v", err, got, tt.temporary)
			}
		})
	}
	t.Run("NetworkError", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		c := toss.Client{BaseURL: srv.URL, SecretKey: testSecret}
		_, err := c.GetPayment(context.Background(), "pk")
		if err == nil || !boxoffice.IsPGTemporary(err) || boxoffice.IsPGCode(err, "") {
			t.Fatalf("GetPayment against a closed server: %v; want a temporary, non-API error", err)
		}
	})
	t.Run("CancelledContext", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		defer srv.Close()
		c := toss.Client{BaseURL: srv.URL, SecretKey: testSecret}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.GetPayment(ctx, "pk")
		if !errors.Is(err, context.Canceled) || !boxoffice.IsPGTemporary(err) {
			t.Fatalf("GetPayment with a cancelled context: %v; want context.Canceled, temporary", err)
		}
	})
}

// The confirm's Idempotency-Key is one per payment and order: a repeat gets
// the same key, a confirm naming another order (a forged redirect) another
// one, and the longest order id and payment key stay within Toss's 300
// characters.
func TestClient_ConfirmIdempotencyKey(t *testing.T) {
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"code":"INVALID_REQUEST","message":"x"}`)
	}))
	defer srv.Close()
	c := toss.Client{BaseURL: srv.URL, SecretKey: testSecret}
	longOrder, longKey := strings.Repeat("o", 64), strings.Repeat("k", boxoffice.MaxPaymentKeyLen)
	for _, call := range [][2]string{{"pk", "order-Z"}, {"pk", "order-Z"}, {"pk", "order-Y"}, {"pk2", "order-Z"}, {longKey, longOrder}} {
		c.Confirm(context.Background(), call[0], call[1], won(1000))
	}
	if len(keys) != 5 || keys[0] == "" || keys[1] != keys[0] {
		t.Fatalf("keys %q: want the same non-empty key for a repeat", keys)
	}
	if keys[2] == keys[0] || keys[3] == keys[0] || keys[3] == keys[2] {
		t.Errorf("keys %q: want another key for another order and for another payment", keys)
	}
	if n := len(keys[4]); n > 300 {
		t.Errorf("the key for the longest order id and payment key has %d characters, want at most 300", n)
	}
}

func TestIsTemporary(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&boxoffice.PGError{Status: 400, Code: boxoffice.PGAlreadyProcessedPayment}, false},
		{&boxoffice.PGError{Status: 404, Code: boxoffice.PGNotFoundPayment}, false},
		{&boxoffice.PGError{Status: 400, Code: boxoffice.PGProviderError}, true},
		{fmt.Errorf("confirm: %w", &boxoffice.PGError{Status: 503}), true},
		{errors.New("connection reset"), true},
	}
	for _, tt := range tests {
		if got := boxoffice.IsPGTemporary(tt.err); got != tt.want {
			t.Errorf("boxoffice.IsPGTemporary(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
