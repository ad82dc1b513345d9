package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/views"
	"github.com/mxschmitt/playwright-go"
)

const (
	tossClientKey = "test_ck_boxoffice_e2e"
	tossSecretKey = "test_sk_boxoffice_e2e"
)

// tossSDKStandIn stands in for Toss's SDK script at views.TossSDKURL. The
// test cannot reach Toss, and Toss's real payment window needs a real card,
// so the browser is served this instead (Playwright's routing): it has the
// SDK's shape (TossPayments(clientKey).payment({customerKey}).requestPayment),
// records every requestPayment's arguments through recordTossCall, and then
// does what Toss's window does for a buyer: the first time, the buyer closes
// the window (the promise rejects with USER_CANCEL); after that, the buyer
// authenticates and is sent to successUrl with a paymentKey. The
// authentication is the sandbox PG's own checkout (pay), which redirects
// exactly as Toss does, and the sandbox answers the app's confirm and
// look-ups as Toss's API would.
const tossSDKStandIn = `
window.TossPayments = function (clientKey) {
  return { payment: function (opts) { return { requestPayment: function (req) {
    return window.recordTossCall(JSON.stringify({ clientKey: clientKey, customerKey: opts.customerKey, request: req }))
      .then(function (n) {
        if (n === 1) { var e = new Error("closed"); e.code = "USER_CANCEL"; throw e; }
        var f = document.createElement("form");
        f.method = "POST";
        f.action = SANDBOX + "/checkout";
        var v = { orderId: req.orderId, amount: String(req.amount.value), orderName: req.orderName,
          successUrl: req.successUrl, failUrl: req.failUrl, action: "pay", scenario: "" };
        Object.keys(v).forEach(function (k) {
          var i = document.createElement("input"); i.type = "hidden"; i.name = k; i.value = v[k]; f.appendChild(i);
        });
        document.body.appendChild(f);
        f.submit();
        return new Promise(function () {});
      });
  } }; } };
};`

// tossCall is what the page passed to the SDK.
type tossCall struct {
	ClientKey   string `json:"clientKey"`
	CustomerKey string `json:"customerKey"`
	Request     struct {
		Method string `json:"method"`
		Amount struct {
			Currency string `json:"currency"`
			Value    int64  `json:"value"`
		} `json:"amount"`
		OrderID       string `json:"orderId"`
		OrderName     string `json:"orderName"`
		SuccessURL    string `json:"successUrl"`
		FailURL       string `json:"failUrl"`
		CustomerEmail string `json:"customerEmail"`
		CustomerName  string `json:"customerName"`
	} `json:"request"`
}

// startTossApp runs the binary with PG_PROVIDER=toss against the sandbox
// PG's API (playing Toss's server side), served by the test on a port of
// its own, on the app's database.
func startTossApp(t *testing.T) (*app, string) {
	t.Helper()
	var handler atomic.Value
	pg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _ := handler.Load().(http.Handler)
		if h == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(pg.Close)
	a := startApp(t, "ADMISSION_TICK=200ms", "PG_PROVIDER=toss", "PG_BASE_URL="+pg.URL,
		"PG_SECRET_KEY="+tossSecretKey, "PG_CLIENT_KEY="+tossClientKey)
	db, err := store.OpenDB(context.Background(), a.DatabaseURL)
	must(t, "open the app's database", err)
	t.Cleanup(db.Close)
	sb, err := sandbox.New(context.Background(), sandbox.Config{
		Provider: sandbox.Provider, Pool: db.Pool, SecretKey: tossSecretKey,
		WebhookURL: a.URL + "/payments/webhook", ReturnOrigin: a.URL, Logger: slog.New(slog.DiscardHandler),
	})
	must(t, "start the sandbox PG", err)
	t.Cleanup(func() { sb.Close() }) // before the database closes (registered earlier)
	handler.Store(http.Handler(sb))
	return a, pg.URL
}

// A buyer on a PG_PROVIDER=toss deployment checks out, reaches our page,
// which opens Toss's payment window with the order's values; closes it, is
// told what to do, opens it again, pays, and returns to a confirmed order.
func TestCheckout_Toss(t *testing.T) {
	a, pgURL := startTossApp(t)
	hall := demoEvents(t, a)[concertHall]
	labels := []string{"1층 C-3-10", "1층 C-3-11"}
	total := priceOf(t, a, hall, labels...)
	page := login(t, a, "fan1@boxoffice.test")

	var mu sync.Mutex
	var calls []tossCall
	must(t, "record the SDK's calls", page.ExposeFunction("recordTossCall", func(args ...any) any {
		var c tossCall
		if s, ok := args[0].(string); !ok || json.Unmarshal([]byte(s), &c) != nil {
			t.Errorf("recordTossCall(%v): not the JSON of a call", args)
		}
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, c)
		return len(calls)
	}))
	standIn := strings.Replace(tossSDKStandIn, "SANDBOX", strconv.Quote(pgURL), 1)
	must(t, "serve the SDK's stand-in", page.Route(views.TossSDKURL, func(r playwright.Route) {
		r.Fulfill(playwright.RouteFulfillOptions{Status: playwright.Int(200), ContentType: playwright.String("text/javascript"), Body: standIn})
	}))

	enter(t, a, page, hall)
	for _, l := range labels {
		must(t, "choose "+l, seat(page, l).Click())
	}
	must(t, "hold", page.GetByTestId("hold-submit").Click())
	must(t, "wait for the held seats", page.Locator(`[data-testid=held-seats] li`).Nth(len(labels)-1).WaitFor())
	must(t, "check out", page.GetByTestId("checkout").Click())
	waitForURL(t, page, "wait for our checkout page", a.URL+"/payments/checkout?**")

	// The window opened by itself and the buyer closed it.
	must(t, "wait for the closed-window sentence", page.GetByTestId("toss-closed").WaitFor())
	if got, want := text(t, page, "toss-closed"), views.In(views.English, boxoffice.M("checkout_window_closed")); got != want {
		t.Errorf("toss-closed %q, want %q", got, want)
	}
	if got := text(t, page, "checkout-amount"); got != total {
		t.Errorf("checkout-amount %q, want %q", got, total)
	}
	screenshot(t, page, "checkout-toss-closed")
	must(t, "phone width", page.SetViewportSize(390, 844))
	screenshot(t, page, "checkout-toss-closed-phone")

	must(t, "open the window again", page.GetByTestId("toss-pay").Click())
	waitForURL(t, page, "wait for the order page", a.URL+"/orders/**")
	must(t, "wait for the tickets", page.GetByTestId("ticket").Nth(1).WaitFor())
	if got := text(t, page, "order-status"); got != "Confirmed" {
		t.Fatalf("order-status %q, want Confirmed", got)
	}
	orderID := text(t, page, "order-id")

	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 {
		t.Fatalf("%d requestPayment calls, want 2 (closed, then paid)", len(calls))
	}
	for i, c := range calls {
		r := c.Request
		if c.ClientKey != tossClientKey || !strings.HasPrefix(c.CustomerKey, "bo_") || r.Method != "CARD" ||
			r.Amount.Currency != "KRW" || views.Money(boxoffice.NewContextWithLang(context.Background(), views.English), r.Amount.Value, "KRW") != total ||
			r.OrderID != orderID || r.OrderName == "" || r.SuccessURL != a.URL+"/payments/success" ||
			r.FailURL != a.URL+"/payments/fail" || r.CustomerEmail != "fan1@boxoffice.test" || r.CustomerName == "" {
			t.Errorf("requestPayment %d: %+v", i, c)
		}
	}
	if calls[0].CustomerKey != calls[1].CustomerKey {
		t.Errorf("customerKey changed between calls: %q, %q", calls[0].CustomerKey, calls[1].CustomerKey)
	}
}

// When Toss's script cannot load (a blocker, a network failure), the page
// says so in the buyer's language, and nothing is charged.
func TestCheckout_TossScriptBlocked(t *testing.T) {
	a, _ := startTossApp(t)
	hall := demoEvents(t, a)[concertHall]
	page := login(t, a, "fan2@boxoffice.test")
	must(t, "block Toss's script", page.Route(views.TossSDKURL, func(r playwright.Route) { r.Abort() }))
	enter(t, a, page, hall)
	must(t, "choose a seat", seat(page, "1층 C-3-12").Click())
	must(t, "hold", page.GetByTestId("hold-submit").Click())
	must(t, "wait for the held seat", page.Locator(`[data-testid=held-seats] li`).First().WaitFor())
	must(t, "check out", page.GetByTestId("checkout").Click())
	waitForURL(t, page, "wait for our checkout page", a.URL+"/payments/checkout?**")
	must(t, "wait for the unavailable sentence", page.GetByTestId("toss-unavailable").WaitFor())
	if got, want := text(t, page, "toss-unavailable"), views.In(views.English, boxoffice.M("checkout_script_failed")); got != want {
		t.Errorf("toss-unavailable %q, want %q", got, want)
	}

	// The same page in Korean, at a phone's width.
	must(t, "switch to Korean", page.Context().AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: views.Korean, URL: playwright.String(a.URL)}}))
	_, err := page.Reload()
	must(t, "reload in Korean", err)
	must(t, "wait for the unavailable sentence", page.GetByTestId("toss-unavailable").WaitFor())
	if got, want := text(t, page, "toss-unavailable"), ko("checkout_script_failed"); got != want {
		t.Errorf("toss-unavailable %q, want %q", got, want)
	}
	screenshot(t, page, "ko-checkout-toss-unavailable")
	must(t, "phone width", page.SetViewportSize(390, 844))
	screenshot(t, page, "ko-checkout-toss-unavailable-phone")
}
