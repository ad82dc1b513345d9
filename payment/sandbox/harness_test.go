package sandbox_test

import (
	"github.com/boxoffice/boxoffice"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

const testSecret = "test_sk_sandbox"

// receiver is a webhook endpoint that records what the sandbox sends. It
// answers 500 to the first failFirst requests, and holds the first hangFirst
// requests open until the sender gives up.
type receiver struct {
	srv *httptest.Server

	mu        sync.Mutex
	failFirst int
	hangFirst int
	calls     int
	delivered []received // requests answered 200
	hanging   chan struct{}
}

type received struct {
	event *toss.WebhookEvent
	at    time.Time
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{hanging: make(chan struct{}, 100)}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	at := time.Now()
	rc.mu.Lock()
	rc.calls++
	n := rc.calls
	hang, fail := n <= rc.hangFirst, n <= rc.hangFirst+rc.failFirst
	rc.mu.Unlock()
	if hang {
		rc.hanging <- struct{}{}
		<-r.Context().Done()
		return
	}
	if fail {
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	ev, err := toss.ParseWebhook(body)
	if err != nil || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad webhook", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.delivered = append(rc.delivered, received{event: ev, at: at})
	rc.mu.Unlock()
}

// events returns the delivered events of one payment, in arrival order.
func (rc *receiver) events(paymentKey string) []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []received
	for _, d := range rc.delivered {
		if d.event.Data.PaymentKey == paymentKey {
			out = append(out, d)
		}
	}
	return out
}

func (rc *receiver) callCount() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.calls
}

// harness is a sandbox on a fresh database, mounted under /sandbox-pg of a
// test server as the app mounts it, with a Client pointed at it and a webhook
// receiver.
type harness struct {
	db     *store.DB
	sb     *sandbox.Sandbox
	srv    *httptest.Server
	client *toss.Client
	recv   *receiver
	cfg    sandbox.Config
	// browser sends checkout forms without following redirects.
	browser *http.Client
}

func newHarness(t *testing.T, opts ...func(*sandbox.Config)) *harness {
	t.Helper()
	return newHarnessOn(t, storetest.MustOpenDB(t), opts...)
}

// newHarnessOn is newHarness on the migrated database db.
func newHarnessOn(t *testing.T, db *store.DB, opts ...func(*sandbox.Config)) *harness {
	t.Helper()
	h := &harness{db: db, recv: newReceiver(t)}
	h.cfg = sandbox.Config{
		Provider:    sandbox.Provider,
		Pool:        h.db.Pool,
		SecretKey:   testSecret,
		WebhookURL:  h.recv.srv.URL + "/payments/webhook",
		LateDelay:   200 * time.Millisecond,
		RetryDelays: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond},
		Logger:      slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&h.cfg)
	}
	h.sb = h.startSandbox(t)
	mux := http.NewServeMux()
	mux.Handle("/sandbox-pg/", http.StripPrefix("/sandbox-pg", h.sb))
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	h.client = &toss.Client{BaseURL: h.srv.URL + "/sandbox-pg", SecretKey: testSecret, HTTP: h.srv.Client()}
	h.browser = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return h
}

// startSandbox starts a sandbox on h's configuration, closed when t ends
// (before the database, whose cleanup was registered earlier).
func (h *harness) startSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(context.Background(), h.cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb
}

const (
	successURL = "https://shop.example/payments/success"
	failURL    = "https://shop.example/payments/fail"
)

// postCheckout sends the checkout form and returns the answer (redirects not followed).
func (h *harness) postCheckout(t *testing.T, form url.Values) *http.Response {
	t.Helper()
	resp, err := h.browser.PostForm(h.srv.URL+"/sandbox-pg/checkout", form)
	if err != nil {
		t.Fatalf("POST /checkout: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func checkoutForm(orderID string, amount int64, action, scenario string) url.Values {
	return url.Values{
		"orderId":    {orderID},
		"amount":     {strconv.FormatInt(amount, 10)},
		"orderName":  {"Concert, 2 seats"},
		"successUrl": {successURL},
		"failUrl":    {failURL},
		"action":     {action},
		"scenario":   {scenario},
	}
}

// pay pays for an order on the checkout page with a scenario and returns the
// success redirect's query.
func (h *harness) pay(t *testing.T, orderID string, amount int64, scenario string) url.Values {
	t.Helper()
	resp := h.postCheckout(t, checkoutForm(orderID, amount, "pay", scenario))
	if resp.StatusCode != http.StatusSeeOther {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("pay: status %d, want 303; body %s", resp.StatusCode, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), successURL+"?") {
		t.Fatalf("pay: Location %q, want %s?...", resp.Header.Get("Location"), successURL)
	}
	return loc.Query()
}

// apiAnswer is a raw answer of the sandbox's API.
type apiAnswer struct {
	status int
	body   []byte
}

func (a apiAnswer) code() string {
	var e struct{ Code string }
	json.Unmarshal(a.body, &e)
	return e.Code
}

func (a apiAnswer) payment(t *testing.T) *boxoffice.Payment {
	t.Helper()
	var p boxoffice.Payment
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatalf("decode payment %s: %v", a.body, err)
	}
	return &p
}

// call sends a raw API request with the test secret key; idemKey "" sends no
// Idempotency-Key.
func (h *harness) call(t testing.TB, method, path, idemKey string, body any) apiAnswer {
	t.Helper()
	return h.callAs(t, testSecret+":", method, path, idemKey, body)
}

// callAs sends a raw API request with Basic credentials "user:password" ("" sends none).
func (h *harness) callAs(t testing.TB, credentials, method, path, idemKey string, body any) apiAnswer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, h.srv.URL+"/sandbox-pg"+path, rd)
	if credentials != "" {
		user, pass, _ := strings.Cut(credentials, ":")
		req.SetBasicAuth(user, pass)
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil { // Errorf, not Fatalf: callers run in many goroutines
		t.Errorf("%s %s: %v", method, path, err)
		return apiAnswer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return apiAnswer{status: resp.StatusCode, body: b}
}

func confirmBody(paymentKey, orderID string, amount int64) map[string]any {
	return map[string]any{"paymentKey": paymentKey, "orderId": orderID, "amount": amount}
}

// amountOf reads the redirect's amount.
// won returns an amount in KRW, the sandbox's currency.
func won(amount int64) boxoffice.Money { return boxoffice.Money{Amount: amount, Currency: "KRW"} }

func amountOf(t *testing.T, q url.Values) int64 {
	t.Helper()
	n, err := strconv.ParseInt(q.Get("amount"), 10, 64)
	if err != nil {
		t.Fatalf("redirect amount %q: %v", q.Get("amount"), err)
	}
	return n
}

// wantAPIError checks that err is an *boxoffice.PGError with this status and code.
func wantAPIError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var apiErr *boxoffice.PGError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v (%T), want *boxoffice.PGError %d %s", err, err, status, code)
	}
	if apiErr.Status != status || apiErr.Code != code {
		t.Fatalf("boxoffice.PGError %d %s (%s), want %d %s", apiErr.Status, apiErr.Code, apiErr.Message, status, code)
	}
}

// statuses lists the statuses of the events, in order.
func statuses(evs []received) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.event.Data.Status)
	}
	return out
}
