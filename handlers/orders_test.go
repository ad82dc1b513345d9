package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/boxoffice/boxoffice/views"
	"github.com/jackc/pgx/v5"
)

// saleEvent creates a venue of 10 seats, A-1-1 to A-1-10 (grade R, 150,000
// KRW), and an on-sale event on it whose queue is open.
func (a *testApp) saleEvent(t *testing.T) *boxoffice.Event {
	t.Helper()
	ctx := context.Background()
	var seats []boxoffice.Seat
	for n := 1; n <= 10; n++ {
		num := fmt.Sprint(n)
		seats = append(seats, boxoffice.Seat{Label: boxoffice.SeatLabel("A", "1", num), Section: "A", Row: "1", Number: num, Grade: "R"})
	}
	v, err := (&store.Venues{DB: a.DB}).CreateVenue(ctx, "Checkout Hall", seats)
	if err != nil {
		t.Fatalf("create venue: %v", err)
	}
	in := boxoffice.NewEventInput()
	now := time.Now().UTC().Truncate(time.Minute)
	in.VenueID, in.Title = v.ID, boxoffice.Text{"en": "Checkout Night"}
	in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = now.Add(-time.Hour), now.Add(24*time.Hour), now.Add(48*time.Hour)
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": "R seat"}, Price: 150000}}
	in.Normalize()
	e, err := a.Srv.Events.CreateEvent(ctx, in)
	if err == nil {
		e, err = a.Srv.Events.PublishEvent(ctx, e.ID)
	}
	if err != nil {
		t.Fatalf("create event: %v", err)
	}
	return e
}

// enter puts the client's fan through the event's waiting room: it joins
// (POST /events/:id/queue) and is admitted by one admission tick.
func (a *testApp) enter(t *testing.T, c *client, eventID int64) {
	t.Helper()
	wantStatus(t, c.do("POST", fmt.Sprintf("/events/%d/queue", eventID), url.Values{}, "Accept: application/json"), http.StatusOK)
	a.admit(t, boxoffice.AdmissionSettings{EventID: eventID, Rate: 1000, TokenTTL: 10 * time.Minute})
}

func (a *testApp) hold(t *testing.T, acct *boxoffice.Account, eventID int64, labels ...string) {
	t.Helper()
	req := boxoffice.HoldRequest{EventID: eventID, AccountID: acct.ID, Limit: 5, TTL: time.Minute}
	if _, err := a.Srv.Holds.Hold(context.Background(), req, labels); err != nil {
		t.Fatalf("hold %v: %v", labels, err)
	}
}

// checkout returns a logged-in fan admitted to a fresh event, holding seats,
// and the order its checkout made (JSON).
func (a *testApp) checkout(t *testing.T, email string, labels ...string) (*client, *boxoffice.Account, orderAnswer) {
	t.Helper()
	ev := a.saleEvent(t)
	c, acct := a.newAccount(t, email, boxoffice.RoleFan)
	a.enter(t, c, ev.ID)
	a.hold(t, acct, ev.ID, labels...)
	resp := c.do("POST", fmt.Sprintf("/events/%d/orders", ev.ID), url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusCreated)
	var o orderAnswer
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		t.Fatal(err)
	}
	return c, acct, o
}

type orderAnswer struct {
	OrderID     string `json:"order_id"`
	Status      string `json:"status"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	CheckoutURL string `json:"checkout_url"`
	Seats       []string
	Tickets     []struct{ ID, Seat, Code, QRURL string }
	Failure     string
}

// payAtSandbox sends the sandbox's checkout form (pay or decline) and
// returns where the PG redirects the buyer, as a path on the app.
func (a *testApp) payAtSandbox(t *testing.T, c *client, o orderAnswer, action, scenario string) string {
	t.Helper()
	wantStatus(t, c.do("GET", strings.TrimPrefix(o.CheckoutURL, a.URL), nil), http.StatusOK)
	loc, err := a.trySandboxPay(c, o, action, scenario)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// trySandboxPay is payAtSandbox, less the checkout page's GET, for
// goroutines other than the test's: it returns the error instead of failing
// the test.
func (a *testApp) trySandboxPay(c *client, o orderAnswer, action, scenario string) (string, error) {
	u, err := url.Parse(o.CheckoutURL)
	if err != nil || !strings.HasPrefix(o.CheckoutURL, a.URL+"/sandbox-pg/checkout?") {
		return "", fmt.Errorf("checkout URL %q, want the sandbox's page", o.CheckoutURL)
	}
	form := u.Query()
	form.Set("action", action)
	form.Set("scenario", scenario)
	resp, err := c.try("POST", "/sandbox-pg/checkout", form)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, a.URL+"/payments/") {
		return "", fmt.Errorf("the PG answers %d redirecting to %q, want 303 to the app's /payments/", resp.StatusCode, loc)
	}
	return strings.TrimPrefix(loc, a.URL), nil
}

func TestCreateOrder(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	path := fmt.Sprintf("/events/%d/orders", ev.ID)
	c, acct := app.newAccount(t, "buyer@example.com", boxoffice.RoleFan)

	wantStatus(t, app.newClient(t).do("POST", path, url.Values{}, "Accept: application/json"), http.StatusUnauthorized)
	resp := c.do("POST", path, url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusForbidden)
	wantErrorCode(t, resp, boxoffice.ENOENTRYTOKEN)

	app.enter(t, c, ev.ID)
	resp = c.do("POST", path, url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusConflict)
	wantErrorCode(t, resp, boxoffice.ENOHOLDS)

	app.hold(t, acct, ev.ID, "A-1-1", "A-1-2")
	resp = c.do("POST", path, url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusCreated)
	var o orderAnswer
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		t.Fatal(err)
	}
	if o.Status != "PENDING_PAYMENT" || o.Amount != 300000 || o.Currency != "KRW" || o.OrderID == "" ||
		!strings.HasPrefix(o.CheckoutURL, app.URL+"/sandbox-pg/checkout?") || !strings.Contains(o.CheckoutURL, "orderId="+o.OrderID) {
		t.Fatalf("order %+v, want PENDING_PAYMENT, 300000 KRW, a sandbox checkout URL", o)
	}

	// A page's form: 303 to the PG's checkout, for the same order.
	resp = c.do("POST", path, url.Values{})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != o.CheckoutURL {
		t.Errorf("Location %q, want %q", loc, o.CheckoutURL)
	}
	hx := c.do("POST", path, url.Values{}, "HX-Request: true")
	wantStatus(t, hx, http.StatusCreated)
	if got := hx.Header.Get("HX-Redirect"); got != o.CheckoutURL {
		t.Errorf("HX-Redirect %q, want %q", got, o.CheckoutURL)
	}
}

// A checkout extends the fan's turn to the end of the order's payment
// window: a fan admitted for a minute, checking out, still has the seat map
// and the checkout (entry token) for as long as the order may be paid.
func TestCreateOrder_ExtendsTurn(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	c, acct := app.newAccount(t, "turn@example.com", boxoffice.RoleFan)
	wantStatus(t, c.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}, "Accept: application/json"), http.StatusOK)
	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1000, TokenTTL: time.Minute})
	app.hold(t, acct, ev.ID, "A-1-1")
	resp := c.do("POST", fmt.Sprintf("/events/%d/orders", ev.ID), url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusCreated)
	var o orderAnswer
	decodeJSON(t, resp, &o)
	var order struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	decodeJSON(t, c.do("GET", "/orders/"+o.OrderID, nil, "Accept: application/json"), &order)
	if order.ExpiresAt.Before(time.Now().Add(time.Minute)) {
		t.Fatalf("the order expires at %v, want its payment window, longer than the turn's minute", order.ExpiresAt)
	}

	resp = c.do("GET", fmt.Sprintf("/events/%d/entry", ev.ID), nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	ttl, _ := decode(t, resp)["ttl_ms"].(float64)
	// The turn's time left was read before now: it ends no earlier than the
	// order (within Redis's millisecond) if it is at least the window's
	// time left now.
	if left := time.Until(order.ExpiresAt) - time.Millisecond; time.Duration(ttl)*time.Millisecond < left {
		t.Errorf("the turn has %v left after the checkout, want at least the payment window's %v", time.Duration(ttl)*time.Millisecond, left)
	}
	wantStatus(t, c.do("GET", seatsPath(ev.ID), nil, "Accept: application/json"), http.StatusOK)
}

// The whole journey over HTTP: checkout, pay at the sandbox, back to the
// success URL, the order page with its tickets and their QR codes.
func TestCheckoutJourney(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c, _, o := app.checkout(t, "journey@example.com", "A-1-3", "A-1-4")

	success := app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioDefault)
	if !strings.HasPrefix(success, "/payments/success?") {
		t.Fatalf("redirect to %s, want /payments/success", success)
	}
	resp := c.do("GET", success, nil)
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/orders/"+o.OrderID {
		t.Fatalf("Location %q, want /orders/%s", loc, o.OrderID)
	}
	app.Sandbox.Wait() // the webhook changes nothing more

	page := doc(t, c.do("GET", "/orders/"+o.OrderID, nil))
	if got := testid(page, "order-status"); got != "Confirmed" {
		t.Errorf("order-status %q, want Confirmed", got)
	}
	if got := testid(page, "order-amount"); got != "₩300,000" {
		t.Errorf("order-amount %q, want ₩300,000", got)
	}
	if _, polls := page.Find(`[data-testid="order"]`).Attr("hx-trigger"); polls {
		t.Error("a confirmed order's page still polls")
	}
	// Each ticket is what the door needs: the event, the venue, the start
	// in the event's time zone, the seat in words with its grade.
	page.Find(`[data-testid="ticket"]`).Each(func(i int, tk *goquery.Selection) {
		testid := func(_ *goquery.Selection, id string) string {
			return strings.TrimSpace(tk.Find(`[data-testid="` + id + `"]`).Text())
		}
		seat := fmt.Sprintf("Section A, row 1, seat %d", 3+i)
		got := []string{testid(tk, "ticket-event"), testid(tk, "ticket-venue"), testid(tk, "ticket-seat"), testid(tk, "ticket-grade")}
		if want := []string{"Checkout Night", "Checkout Hall", seat, "R seat (R)"}; !slices.Equal(got, want) {
			t.Errorf("ticket %d says %q, want %q", i, got, want)
		}
		when, err := time.Parse(time.RFC3339, tk.Find(`[data-testid="ticket-time"]`).AttrOr("datetime", ""))
		if err != nil || when.Before(time.Now().Add(47*time.Hour)) || !strings.HasSuffix(testid(tk, "ticket-time"), "KST") {
			t.Errorf("ticket %d's time %q (%v), want the start in 2 days in Seoul's time", i, testid(tk, "ticket-time"), err)
		}
	})
	qrs := page.Find(`[data-testid="ticket-qr"]`)
	if qrs.Length() != 2 {
		t.Fatalf("%d ticket QR codes, want 2", qrs.Length())
	}
	src, _ := qrs.First().Attr("src")
	img := c.do("GET", src, nil)
	wantStatus(t, img, http.StatusOK)
	if _, err := png.Decode(img.Body); err != nil || img.Header.Get("Content-Type") != "image/png" {
		t.Errorf("QR code %s: %s, %v; want a PNG", src, img.Header.Get("Content-Type"), err)
	}

	var got orderAnswer
	if err := json.NewDecoder(c.do("GET", "/orders/"+o.OrderID, nil, "Accept: application/json").Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Status != "CONFIRMED" || len(got.Seats) != 2 || len(got.Tickets) != 2 || got.Tickets[0].Code == "" {
		t.Errorf("order JSON %+v, want CONFIRMED with 2 seats and 2 tickets", got)
	}
	for _, tk := range got.Tickets {
		if _, ok := boxoffice.VerifyTicketCode(app.Orders.TicketSecret, tk.Code, o.eventID(t, app), tk.Seat); !ok {
			t.Errorf("ticket %s: code %q does not verify", tk.Seat, tk.Code)
		}
	}
	if n := app.queryInt(t, `SELECT count(*) FROM payment WHERE order_id = $1`, o.OrderID); n != 1 {
		t.Errorf("%d payments recorded, want 1", n)
	}

	// The success URL again (a reload): the same order page.
	wantStatus(t, c.do("GET", success, nil), http.StatusSeeOther)

	// Strangers get 404; visitors are asked to log in.
	stranger, _ := app.newAccount(t, "stranger@example.com", boxoffice.RoleFan)
	wantStatus(t, stranger.do("GET", "/orders/"+o.OrderID, nil), http.StatusNotFound)
	wantStatus(t, stranger.do("GET", src, nil), http.StatusNotFound)
	wantStatus(t, app.newClient(t).do("GET", "/orders/"+o.OrderID, nil), http.StatusSeeOther)

	mine := doc(t, c.do("GET", "/me/orders", nil))
	if rows := mine.Find(`[data-testid="orders-row"]`); rows.Length() != 1 || testid(mine, "orders-status") != "Confirmed" {
		t.Errorf("my orders: %d rows, status %q; want 1, Confirmed", rows.Length(), testid(mine, "orders-status"))
	}
	var list struct{ Orders []orderAnswer }
	if err := json.NewDecoder(c.do("GET", "/me/orders", nil, "Accept: application/json").Body).Decode(&list); err != nil ||
		len(list.Orders) != 1 || list.Orders[0].OrderID != o.OrderID {
		t.Errorf("my orders JSON %+v (%v), want the order", list, err)
	}
	if n := doc(t, stranger.do("GET", "/me/orders", nil)).Find(`[data-testid="no-orders"]`).Length(); n != 1 {
		t.Error("a stranger's orders list is not empty")
	}
}

// Declined at the PG: the order page says why and the order stays payable.
func TestPaymentFail(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c, _, o := app.checkout(t, "decline@example.com", "A-1-5")
	fail := app.payAtSandbox(t, c, o, "decline", sandbox.ScenarioDefault)
	if !strings.HasPrefix(fail, "/payments/fail?") || !strings.Contains(fail, "code=PAY_PROCESS_CANCELED") {
		t.Fatalf("redirect to %s, want /payments/fail with PAY_PROCESS_CANCELED", fail)
	}
	page := doc(t, c.do("GET", fail, nil))
	if got := testid(page, "payment-failed"); got != "You cancelled the payment. No money was taken." {
		t.Errorf("payment-failed %q", got)
	}
	if got := testid(page, "order-status"); got != "Waiting for payment" {
		t.Errorf("order-status %q, want Waiting for payment", got)
	}
	if href, _ := page.Find(`[data-testid="order-pay"]`).Attr("href"); href != o.CheckoutURL {
		t.Errorf("pay link %q, want the checkout URL %q", href, o.CheckoutURL)
	}
	if trig, _ := page.Find(`[data-testid="order"]`).Attr("hx-trigger"); trig == "" {
		t.Error("a pending order's page does not poll")
	}
	// A forged message in the link is not shown.
	page = doc(t, c.do("GET", "/payments/fail?code=X&message=Call+0800+now&orderId="+o.OrderID, nil))
	if strings.Contains(page.Text(), "0800") {
		t.Error("the fail page shows the link's message")
	}
	stranger, _ := app.newAccount(t, "nosy@example.com", boxoffice.RoleFan)
	wantStatus(t, stranger.do("GET", fail, nil), http.StatusNotFound)

	// Paying again works: the htmx poll then shows the tickets.
	success := app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioWebhookNever)
	wantStatus(t, c.do("GET", success, nil), http.StatusSeeOther)
	frag := doc(t, c.do("GET", "/orders/"+o.OrderID, nil, "HX-Request: true"))
	if frag.Find("html > body > main").Length() != 0 || testid(frag, "order-status") != "Confirmed" ||
		frag.Find(`[data-testid="ticket"]`).Length() != 1 {
		t.Errorf("htmx fragment: status %q, %d tickets; want the fragment alone, Confirmed, 1 ticket",
			testid(frag, "order-status"), frag.Find(`[data-testid="ticket"]`).Length())
	}
}

// A success redirect whose amount was changed: no confirmation, the order
// fails, and the page says why.
func TestPaymentSuccess_Tampered(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c, _, o := app.checkout(t, "tamper@example.com", "A-1-6")
	// A forged redirect with a payment the PG does not have for this order,
	// from anyone who learnt the order id: refused, and nothing changes.
	forged := fmt.Sprintf("/payments/success?orderId=%s&paymentKey=made-up&amount=5", o.OrderID)
	wantStatus(t, app.newClient(t).do("GET", forged, nil, "Accept: application/json"), http.StatusBadRequest)
	if got := testid(doc(t, c.do("GET", "/orders/"+o.OrderID, nil)), "order-status"); got == "Failed" {
		t.Fatalf("a forged redirect failed the order")
	}
	success := app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioTamperAmount)
	wantStatus(t, c.do("GET", success, nil), http.StatusSeeOther)
	page := doc(t, c.do("GET", "/orders/"+o.OrderID, nil))
	if testid(page, "order-status") != "Failed" || testid(page, "order-failure") == "" {
		t.Errorf("order-status %q, failure %q; want Failed with a reason", testid(page, "order-status"), testid(page, "order-failure"))
	}
	// The failed order's seats are still the fan's: the page says so, and
	// leads to the seat map to check out again or release them.
	for lang, want := range map[string]string{
		"en": "Your seats are still held for you until",
		"ko": "까지 계속 선점되어 있습니다. 좌석 배치도에서 다시 결제하거나 선점을 해제할 수 있습니다.",
	} {
		page := doc(t, c.do("GET", "/orders/"+o.OrderID, nil, "Accept-Language: "+lang))
		if got := testid(page, "order-failed-held"); !strings.Contains(got, want) {
			t.Errorf("a failed order's page (%s) says %q, want %q", lang, got, want)
		}
		if href, _ := page.Find(`[data-testid="order-failed-seats"]`).Attr("href"); href != fmt.Sprintf("/events/%d/seats", o.eventID(t, app)) {
			t.Errorf("a failed order's page (%s) links %q, want the seat map", lang, href)
		}
	}
	u, _ := url.Parse(success)
	p, err := app.PG.GetPayment(context.Background(), u.Query().Get("paymentKey"))
	if err != nil || p.Status != boxoffice.PaymentStatusInProgress {
		t.Errorf("PG payment %+v (%v), want IN_PROGRESS: never confirmed", p, err)
	}
	wantStatus(t, c.do("GET", "/payments/success?orderId="+o.OrderID+"&paymentKey=x&amount=lots", nil), http.StatusBadRequest)
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c, _, o := app.checkout(t, "hook@example.com", "A-1-7")
	success := app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioWebhookNever)
	u, _ := url.Parse(success)
	key := u.Query().Get("paymentKey")
	if _, err := app.PG.Confirm(context.Background(), key, o.OrderID, boxoffice.Money{Amount: o.Amount, Currency: o.Currency}); err != nil {
		t.Fatal(err)
	}
	// A payment the PG has for an order that is not ours.
	strange := app.payAtSandbox(t, c, orderAnswer{CheckoutURL: app.Checkout.PG.CheckoutURL(boxoffice.CheckoutRequest{OrderID: "not-our-order", Amount: boxoffice.Money{Amount: 1000, Currency: "KRW"}, OrderName: "Other", SuccessURL: app.Checkout.SuccessURL, FailURL: app.Checkout.FailURL})}, "pay", sandbox.ScenarioWebhookNever)
	su, _ := url.Parse(strange)

	event := func(key, orderID string) string {
		return fmt.Sprintf(`{"eventType":"PAYMENT_STATUS_CHANGED","createdAt":"2026-11-29T10:00:00.000000","data":{"paymentKey":%q,"orderId":%q,"status":"DONE"}}`, key, orderID)
	}
	tests := []struct {
		name string
		body string
		want int
	}{
		{"Garbage", "not json", http.StatusBadRequest},
		{"OtherEventType", `{"eventType":"DEPOSIT_CALLBACK","data":{"paymentKey":"k","orderId":"o"}}`, http.StatusOK}, // ignored, or the PG retries for days
		{"TooLarge", `{"eventType":"PAYMENT_STATUS_CHANGED","x":"` + strings.Repeat("a", toss.MaxWebhookBytes) + `"}`, http.StatusRequestEntityTooLarge},
		{"UnknownPayment", event("tsbx-forged", o.OrderID), http.StatusUnauthorized},
		{"OtherOrdersPayment", event(key, "someone-elses"), http.StatusUnauthorized},
		{"OK", event(key, o.OrderID), http.StatusOK},
		{"Repeat", event(key, o.OrderID), http.StatusOK},
		{"NotOurOrder", event(su.Query().Get("paymentKey"), "not-our-order"), http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(app.URL+"/payments/webhook", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want JSON for the PG, errors included", ct)
			}
		})
	}
	// A webhook that says CANCELED of a payment the PG still has DONE is
	// answered with the outcome recorded: no refund is claimed or made.
	canceled := strings.Replace(event(key, o.OrderID), `"status":"DONE"`, `"status":"CANCELED"`, 1)
	resp, err := http.Post(app.URL+"/payments/webhook", "application/json", strings.NewReader(canceled))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct{ Status, Outcome string }
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK ||
		answer.Status != "CONFIRMED" || answer.Outcome != string(boxoffice.PaymentConfirmed) {
		t.Errorf("a CANCELED webhook of a payment the PG has DONE: %d %+v (%v), want 200 CONFIRMED, outcome confirmed", resp.StatusCode, answer, err)
	}
	resp.Body.Close()
	if n := app.queryInt(t, `SELECT count(*) FROM refund`); n != 0 {
		t.Errorf("%d refunds recorded, want none", n)
	}
	var got orderAnswer
	if err := json.NewDecoder(c.do("GET", "/orders/"+o.OrderID, nil, "Accept: application/json").Body).Decode(&got); err != nil ||
		got.Status != "CONFIRMED" || len(got.Tickets) != 1 {
		t.Errorf("order after the webhooks %+v (%v), want CONFIRMED with 1 ticket", got, err)
	}
}

// PostgreSQL is unavailable when the PG's webhook comes: it answers 5xx, the
// PG retries, and the retry confirms the order once.
func TestWebhook_PostgresDown(t *testing.T) {
	t.Parallel()
	appDB, pgDB := storetest.MustOpenDB(t), storetest.MustOpenDB(t)
	app := newTestAppPG(t, appDB, pgDB, storetest.MustOpenRedis(t))
	c, _, o := app.checkout(t, "outage@example.com", "A-1-8")
	success := app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioDefault)
	u, _ := url.Parse(success)
	key := u.Query().Get("paymentKey")

	unblock := blockDatabase(t, appDB)
	// The redirect never made it; the PG confirms (the money moves) and
	// sends its webhook, which finds PostgreSQL down.
	if _, err := app.PG.Confirm(context.Background(), key, o.OrderID, boxoffice.Money{Amount: o.Amount, Currency: o.Currency}); err != nil {
		t.Fatal(err)
	}
	var attempts int
	var lastError string
	waitFor(t, "a webhook attempt answered 5xx", func() bool {
		pgDB.Pool.QueryRow(context.Background(), `SELECT attempts, last_error FROM sandbox_pg.sandbox_pg_webhook WHERE payment_key = $1`, key).
			Scan(&attempts, &lastError)
		return attempts > 0
	})
	if !strings.Contains(lastError, "webhook answered 5") {
		t.Fatalf("first attempt: %q, want a 5xx answer", lastError)
	}
	unblock()
	waitFor(t, "the webhook delivered", func() bool {
		var delivered bool
		pgDB.Pool.QueryRow(context.Background(), `SELECT delivered_at IS NOT NULL FROM sandbox_pg.sandbox_pg_webhook WHERE payment_key = $1`, key).Scan(&delivered)
		return delivered
	})
	if n := app.queryInt(t, `SELECT count(*) FROM payment WHERE order_id = $1 AND outcome = 'confirmed'`, o.OrderID); n != 1 {
		t.Errorf("%d confirmed payments, want 1", n)
	}
	if n := app.queryInt(t, `SELECT count(*) FROM ticket WHERE order_id = $1`, o.OrderID); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

func wantErrorCode(t *testing.T, resp *http.Response, code string) {
	t.Helper()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body["error"] != code {
		t.Errorf("error body %v (%v), want error %s", body, err, code)
	}
}

func (a *testApp) queryInt(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := a.DB.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (o orderAnswer) eventID(t *testing.T, a *testApp) int64 {
	t.Helper()
	var id int64
	if err := a.DB.Pool.QueryRow(context.Background(), `SELECT event_id FROM orders WHERE id = $1`, o.OrderID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// waitFor polls cond every 20 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// blockDatabase makes db's database refuse connections and ends the open
// ones, which is what a PostgreSQL outage looks like to the app; the
// returned function (also run when t ends) lets connections in again.
func blockDatabase(t *testing.T, db *store.DB) func() {
	t.Helper()
	ctx := context.Background()
	var name string
	if err := db.Pool.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(storetest.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+ident+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unblock := func() {
		once.Do(func() {
			if _, err := admin.Exec(ctx, `ALTER DATABASE `+ident+` ALLOW_CONNECTIONS true`); err != nil {
				t.Errorf("unblock database: %v", err)
			}
			admin.Close(ctx)
		})
	}
	t.Cleanup(unblock)
	return unblock
}

// An order still waiting for payment past its expiry (the expiry worker is
// not running here) shows on the admin's dashboard, with why.
func TestAdmin_StuckOrders(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin, _ := app.newAccount(t, "boss@example.com", boxoffice.RoleAdmin)
	if got := testid(doc(t, admin.do("GET", "/admin", nil)), "no-stuck-orders"); got == "" {
		t.Fatal("the dashboard of a quiet sale does not say that no order is stuck")
	}
	_, _, o := app.checkout(t, "slow@example.com", "A-1-1")
	if _, err := app.DB.Pool.Exec(context.Background(), `UPDATE orders SET expires_at = now() - interval '1 minute' WHERE id = $1`, o.OrderID); err != nil {
		t.Fatal(err)
	}
	d := doc(t, admin.do("GET", "/admin", nil))
	if n := d.Find(`[data-testid="stuck-order"]`).Length(); n != 1 {
		t.Fatalf("%d stuck orders shown, want 1", n)
	}
	if row := testid(d, "stuck-order"); !strings.Contains(row, o.OrderID) || !strings.Contains(testid(d, "stuck-why"), "expiry worker") {
		t.Errorf("stuck order row %q, want the order id and why", row)
	}
}

// With PG_PROVIDER=toss the checkout is our page that opens Toss's payment
// window: the order's owner gets the SDK's script and the window's values
// (the order's own amount and currency, the client key, a customerKey that
// names the account without revealing it); anyone else a 404; a deployment
// without a client key (the sandbox) has no such page.
func TestTossCheckoutPage(t *testing.T) {
	t.Parallel()
	const clientKey = "test_ck_boxoffice"
	secret := []byte("customer-key-secret-of-32-characters")
	app := newTestApp(t, func(s *handlers.Server) { s.PGClientKey, s.CustomerKeySecret = clientKey, secret })
	c, acct, o := app.checkout(t, "toss@example.com", "A-1-3", "A-1-4")
	path := "/payments/checkout?orderId=" + o.OrderID

	d := doc(t, c.do("GET", path, nil))
	box := d.Find(`[data-testid="toss-checkout"]`)
	want := map[string]string{
		"data-client-key": clientKey, "data-customer-key": boxoffice.CustomerKey(secret, acct.ID),
		"data-order-id": o.OrderID, "data-amount": fmt.Sprint(o.Amount), "data-currency": o.Currency,
		"data-success-url": app.Checkout.SuccessURL, "data-fail-url": app.Checkout.FailURL,
		"data-customer-email": acct.Email, "data-customer-name": acct.Name,
	}
	for attr, v := range want {
		if got := box.AttrOr(attr, "<none>"); got != v {
			t.Errorf("%s = %q, want %q", attr, got, v)
		}
	}
	if ck := boxoffice.CustomerKey(secret, acct.ID); ck == boxoffice.CustomerKey(secret, acct.ID+1) ||
		ck == boxoffice.CustomerKey([]byte("another secret"), acct.ID) {
		t.Errorf("customerKey %q is not a keyed, per-account value", ck)
	}
	if d.Find(`script[src="`+views.TossSDKURL+`"]`).Length() != 1 || d.Find(`script[src="/static/toss_checkout.js"]`).Length() != 1 {
		t.Error("the page does not load Toss's SDK and the window's script")
	}
	for _, id := range []string{"toss-closed", "toss-unavailable", "toss-pay"} {
		if testid(d, id) == "" {
			t.Errorf("no %s sentence on the page", id)
		}
	}

	stranger, _ := app.newAccount(t, "toss-stranger@example.com", boxoffice.RoleFan)
	wantStatus(t, stranger.do("GET", path, nil), http.StatusNotFound)
	wantStatus(t, stranger.do("GET", "/payments/checkout?orderId=../x", nil), http.StatusNotFound)

	sandbox := newTestApp(t)
	sc, _, so := sandbox.checkout(t, "sandbox@example.com", "A-1-3")
	wantStatus(t, sc.do("GET", "/payments/checkout?orderId="+so.OrderID, nil), http.StatusNotFound)
}

// A payment the app refused for its amount (a redirect with a tampered
// amount, or a payment for less than the order) was never confirmed, so
// nothing was charged: the order page says so, and speaks of no refund.
func TestOrderPage_AmountRefusedNothingCharged(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	for i, scenario := range []string{sandbox.ScenarioTamperAmount, sandbox.ScenarioPayLess} {
		t.Run(scenario, func(t *testing.T) {
			c, _, o := app.checkout(t, fmt.Sprintf("amount%d@example.com", i), "A-1-1")
			wantStatus(t, c.do("GET", app.payAtSandbox(t, c, o, "pay", scenario), nil), http.StatusSeeOther)
			page := doc(t, c.do("GET", "/orders/"+o.OrderID, nil))
			want := views.In(views.English, boxoffice.M("order_fail_amount_uncharged"))
			if got := testid(page, "order-status"); got != "Failed" {
				t.Errorf("order-status %q, want Failed", got)
			}
			if got := testid(page, "order-failure"); got != want {
				t.Errorf("order-failure %q, want %q", got, want)
			}
		})
	}
}
