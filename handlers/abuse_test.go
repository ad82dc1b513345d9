package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/labstack/echo/v4"
)

// route is one method and path of the route table, its parameters filled.
type route struct{ method, path string }

// routes returns every route of the app's table whose path starts with
// prefix and whose method is among methods, each ":name" parameter replaced
// by params[name] (an event, venue or order that exists) and a trailing "*"
// by star. Reading the table itself means a route added later is checked
// too.
func (a *testApp) routes(t *testing.T, prefix string, methods []string, params map[string]string, star string) []route {
	t.Helper()
	e, ok := a.Config.Handler.(*echo.Echo)
	if !ok {
		t.Fatalf("the app's handler is a %T, want *echo.Echo", a.Config.Handler)
	}
	var out []route
	for _, r := range e.Routes() {
		if !strings.HasPrefix(r.Path, prefix) || !slices.Contains(methods, r.Method) {
			continue
		}
		parts := strings.Split(r.Path, "/")
		for i, p := range parts {
			switch {
			case strings.HasPrefix(p, ":"):
				v, ok := params[p[1:]]
				if !ok {
					t.Fatalf("route %s %s: no value for %s", r.Method, r.Path, p)
				}
				parts[i] = v
			case p == "*":
				parts[i] = star
			}
		}
		out = append(out, route{r.Method, strings.Join(parts, "/")})
	}
	if len(out) == 0 {
		t.Fatalf("no route under %s", prefix)
	}
	return out
}

var stateChanging = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// Every admin route, pages and posts alike, refuses a fan with 403 and sends
// a visitor to log in, and none of them changes anything.
func TestAdmin_EveryRouteRefusesFans(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	venue := adminVenue(t, app, "Hall")
	ev := adminEvent(t, app, venue.ID, "Gala")
	fan, _ := app.newAccount(t, "fan@example.com", boxoffice.RoleFan)
	visitor := app.newClient(t)
	form := url.Values{"name": {"Taken over"}, "title.en": {"Taken over"}, "paused": {"true"}, "rate": {"1"}}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	var routes []route
	for _, r := range app.routes(t, "/admin", methods, map[string]string{"id": "ID", "order": "order-123"}, "") {
		id := ev.ID
		if strings.HasPrefix(r.path, "/admin/venues/") {
			id = venue.ID
		}
		routes = append(routes, route{r.method, strings.Replace(r.path, "ID", fmt.Sprint(id), 1)})
	}
	if len(routes) < 18 {
		t.Fatalf("%d admin routes found, want them all (18 or more): %v", len(routes), routes)
	}

	before := app.snapshot(t)
	for _, r := range routes {
		resp := fan.do(r.method, r.path, form)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s as a fan: status %d, want 403", r.method, r.path, resp.StatusCode)
		}
		resp = fan.do(r.method, r.path, form, "Accept: application/json")
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s as a fan (JSON): status %d, want 403", r.method, r.path, resp.StatusCode)
		} else if m := decode(t, resp); m["error"] != boxoffice.EFORBIDDEN || m["message"] != "This page is for administrators." {
			t.Errorf("%s %s as a fan: %v, want forbidden, for administrators", r.method, r.path, m)
		}
		resp = visitor.do(r.method, r.path, form)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
			t.Errorf("%s %s as a visitor: status %d to %q, want 303 to the log-in page", r.method, r.path, resp.StatusCode, loc)
		}
	}
	if after := app.snapshot(t); after != before {
		t.Errorf("refused admin requests changed the data:\nbefore %s\nafter  %s", before, after)
	}
}

// Every state-changing route (POST, PUT, PATCH, DELETE), the PG's webhook
// and the sandbox PG included, refuses a browser's request from another
// site with 403, even from an account that may do what it asks, and none of
// them changes anything.
func TestCrossOrigin_EveryStateChangingRoute(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	admin, _ := app.newFan(t, "admin-fan@example.com", e.ID)
	if _, err := app.DB.Pool.Exec(context.Background(), `UPDATE account SET role = 'admin'`); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, admin.do("POST", "/login", url.Values{"email": {"admin-fan@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)
	hold(t, admin, e.ID, "A-1-2")
	params := map[string]string{"id": fmt.Sprint(e.ID), "seat": "A-1-2", "order": "order-123"}
	routes := app.routes(t, "/", stateChanging, params, "checkout")
	for _, want := range []route{{"POST", "/signup"}, {"POST", "/login"}, {"POST", "/logout"}, {"POST", "/payments/webhook"},
		{"POST", fmt.Sprintf("/events/%d/holds", e.ID)}, {"POST", fmt.Sprintf("/events/%d/orders", e.ID)}, {"POST", "/sandbox-pg/checkout"}} {
		if !slices.Contains(routes, want) {
			t.Fatalf("the route table lacks %v: %v", want, routes)
		}
	}
	form := url.Values{"email": {"x@example.com"}, "password": {"correct horse"}, "name": {"X"}, "seat": {"A-1-1"},
		"paused": {"true"}, "title.en": {"Taken over"}}

	before := app.snapshot(t)
	for _, r := range routes {
		for _, h := range [][]string{
			{"Origin: https://evil.example", "Sec-Fetch-Site: cross-site"},
			{"Origin: https://evil.example"}, // a browser without Fetch Metadata
		} {
			resp := admin.do(r.method, r.path, form, append(h, "Accept: application/json")...)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s from another site (%v): status %d, want 403", r.method, r.path, h, resp.StatusCode)
				continue
			}
			if m := decode(t, resp); m["message"] != "This request came from another site and was refused." {
				t.Errorf("%s %s from another site: %v, want the cross-site refusal", r.method, r.path, m)
			}
		}
	}
	if after := app.snapshot(t); after != before {
		t.Errorf("cross-site requests changed the data:\nbefore %s\nafter  %s", before, after)
	}
	// The same request from the site itself goes through.
	resp := admin.do("POST", fmt.Sprintf("/events/%d/holds", e.ID), url.Values{"seat": {"A-1-1"}}, "Origin: "+app.URL, "Sec-Fetch-Site: same-origin", "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
}

// One account has one place in line however many tabs and devices join at
// once: every join answers the same place, and the line holds one entry.
func TestQueue_OnePlacePerAccount(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	join := app.URL + fmt.Sprintf("/events/%d/queue", ev.ID)
	first, _ := app.newAccount(t, "first@example.com", boxoffice.RoleFan)
	wantStatus(t, first.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}), http.StatusSeeOther)

	const devices, tabs = 8, 4
	_, acct := app.newAccount(t, "tabs@example.com", boxoffice.RoleFan)
	var sessions []*client
	for range devices {
		c := app.newClient(t)
		wantStatus(t, c.do("POST", "/login", url.Values{"email": {acct.Email}, "password": {"correct horse"}}), http.StatusSeeOther)
		sessions = append(sessions, c)
	}
	type answer struct {
		status   int
		position float64
		err      error
	}
	answers := make(chan answer, devices*tabs)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range sessions {
		for range tabs {
			wg.Go(func() {
				<-start
				req, _ := http.NewRequest("POST", join, nil)
				req.Header.Set("Accept", "application/json")
				resp, err := c.Do(req)
				if err != nil {
					answers <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				var m struct{ Position float64 }
				err = json.NewDecoder(resp.Body).Decode(&m)
				answers <- answer{resp.StatusCode, m.Position, err}
			})
		}
	}
	close(start)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.err != nil || a.status != http.StatusOK || a.position != 2 {
			t.Errorf("a join answered %d at position %v (%v), want 200 at position 2", a.status, a.position, a.err)
		}
	}
	st, err := app.Srv.Queue.QueueStats(context.Background(), ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Waiting != 2 || st.Joined != 2 {
		t.Errorf("the line holds %d fans (%d places handed out), want 2: one per account", st.Waiting, st.Joined)
	}
	last, _ := app.newAccount(t, "last@example.com", boxoffice.RoleFan)
	resp := last.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if m := decode(t, resp); m["position"] != 3.0 {
		t.Errorf("the next account is at %v, want 3", m["position"])
	}
}

// An entry works only in the session its token was issued to: in another
// session, of the same account or of another one, the seat map, holds,
// releases and checkout all answer 403 no_entry_token and nothing changes,
// while the entry still works in its own session. Sessions hold no token
// that could be copied between them: the token is bound to the session's
// key in Redis, and each request's check reads that binding.
func TestEntry_OtherSessionUseless(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	fan, acct := app.newFan(t, "fan@example.com", e.ID)
	hold(t, fan, e.ID, "A-1-1")
	sameAccount := app.newClient(t)
	wantStatus(t, sameAccount.do("POST", "/login", url.Values{"email": {acct.Email}, "password": {"correct horse"}}), http.StatusSeeOther)
	stranger, _ := app.newAccount(t, "stranger@example.com", boxoffice.RoleFan)

	before := app.snapshot(t)
	for name, c := range map[string]*client{"SameAccount": sameAccount, "OtherAccount": stranger} {
		t.Run(name, func(t *testing.T) {
			for _, r := range []struct {
				method, path string
				form         url.Values
			}{
				{"GET", seatsPath(e.ID), nil},
				{"GET", seatsPath(e.ID) + "/status", nil},
				{"POST", holdsPath(e.ID), url.Values{"seat": {"A-1-2"}}},
				{"DELETE", holdsPath(e.ID) + "/A-1-1", nil},
				{"POST", holdsPath(e.ID) + "/A-1-1/release", url.Values{}},
				{"POST", fmt.Sprintf("/events/%d/orders", e.ID), url.Values{}},
			} {
				resp := c.do(r.method, r.path, r.form, "Accept: application/json")
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("%s %s from another session: status %d, want 403", r.method, r.path, resp.StatusCode)
				} else if m := decode(t, resp); m["error"] != boxoffice.ENOENTRYTOKEN {
					t.Errorf("%s %s from another session: %v, want no_entry_token", r.method, r.path, m)
				}
			}
		})
	}
	if after := app.snapshot(t); after != before {
		t.Errorf("another session changed the data:\nbefore %s\nafter  %s", before, after)
	}
	if m := getSeatMap(t, fan, e.ID); !slices.Equal(m.Holds.Seats, []string{"A-1-1"}) {
		t.Errorf("the fan's holds = %v, want A-1-1 still", m.Holds.Seats)
	}
	hold(t, fan, e.ID, "A-1-2")
}

// postWebhook sends a webhook body as the PG would and returns the status.
func postWebhook(t *testing.T, app *testApp, body string) int {
	t.Helper()
	resp, err := http.Post(app.URL+"/payments/webhook", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// Forged webhooks change nothing: the body only names a payment, which is
// looked up at the PG; its status and amount are never believed. A payment
// the PG does not know, or knows for another order, is refused untouched;
// one the PG holds for the wrong amount is never confirmed, whatever the
// body claims.
func TestWebhook_Forged(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c, _, o := app.checkout(t, "buyer@example.com", "A-1-1")
	_, _, other := app.checkout(t, "other@example.com", "A-1-2")
	otherKey := paymentKeyOf(t, app.payAtSandbox(t, c, other, "pay", sandbox.ScenarioWebhookNever))
	forged := func(key, orderID string, amount int64) string {
		return fmt.Sprintf(`{"eventType":"PAYMENT_STATUS_CHANGED","createdAt":"2026-11-29T10:00:00.000000",
			"data":{"paymentKey":%q,"orderId":%q,"status":"DONE","totalAmount":%d,"balanceAmount":%[3]d,"method":"카드"}}`, key, orderID, amount)
	}

	before := app.snapshot(t)
	for _, tt := range []struct{ name, body string }{
		{"UnknownPayment", forged("tsbx-never-issued", o.OrderID, o.Amount)},
		{"OtherOrdersPayment", forged(otherKey, o.OrderID, o.Amount)},
	} {
		if status := postWebhook(t, app, tt.body); status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", tt.name, status)
		}
	}
	if after := app.snapshot(t); after != before {
		t.Errorf("forged webhooks changed the data:\nbefore %s\nafter  %s", before, after)
	}

	// The buyer authenticated 1,000 won less than the order at the PG (and
	// never came back); a webhook says it is DONE for the full amount.
	key := paymentKeyOf(t, app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioPayLess))
	if status := postWebhook(t, app, forged(key, o.OrderID, o.Amount)); status != http.StatusOK {
		t.Errorf("a webhook for a real payment: status %d, want 200 (handled)", status)
	}
	var got orderAnswer
	decodeJSON(t, c.do("GET", "/orders/"+o.OrderID, nil, "Accept: application/json"), &got)
	if got.Status == "CONFIRMED" || len(got.Tickets) != 0 {
		t.Errorf("order %+v, want it not confirmed and no tickets", got)
	}
	if n := app.queryInt(t, `SELECT count(*) FROM sold_seat`); n != 0 {
		t.Errorf("%d seats sold, want none", n)
	}
	if p, err := app.PG.GetPayment(context.Background(), key); err != nil || p.Status == boxoffice.PaymentStatusDone {
		t.Errorf("the PG's payment %+v (%v), want it never confirmed (no money taken)", p, err)
	}
}

// paymentKeyOf reads the paymentKey of the PG's success redirect.
func paymentKeyOf(t *testing.T, redirect string) string {
	t.Helper()
	u, err := url.Parse(redirect)
	if err != nil || u.Query().Get("paymentKey") == "" {
		t.Fatalf("redirect %q has no paymentKey", redirect)
	}
	return u.Query().Get("paymentKey")
}

// Seats, amounts and prices sent by the browser are never believed: the
// order is made of the account's holds at the event's prices whatever the
// checkout form says, another account's seat named in it stays theirs, and
// a payment page posted with a lower amount, even one the PG then takes,
// never sells a seat: the money is refunded.
func TestCheckout_BrowserValuesIgnored(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	c, acct := app.newAccount(t, "buyer@example.com", boxoffice.RoleFan)
	app.enter(t, c, ev.ID)
	_, other := app.newAccount(t, "other@example.com", boxoffice.RoleFan)
	app.hold(t, acct, ev.ID, "A-1-1")
	app.hold(t, other, ev.ID, "A-1-2")

	resp := c.do("POST", fmt.Sprintf("/events/%d/orders", ev.ID), url.Values{
		"seat": {"A-1-2", "A-1-3"}, "amount": {"1"}, "price": {"1"}, "currency": {"USD"}, "account_id": {fmt.Sprint(other.ID)},
	}, "Accept: application/json")
	wantStatus(t, resp, http.StatusCreated)
	var o orderAnswer
	decodeJSON(t, resp, &o)
	var got orderAnswer
	decodeJSON(t, c.do("GET", "/orders/"+o.OrderID, nil, "Accept: application/json"), &got)
	if o.Amount != 150000 || o.Currency != "KRW" || !slices.Equal(got.Seats, []string{"A-1-1"}) {
		t.Errorf("order %+v of seats %v, want A-1-1 alone at 150000 KRW", o, got.Seats)
	}
	if seats, _, err := app.Srv.Holds.MyHolds(context.Background(), ev.ID, other.ID); err != nil || !slices.Equal(seats, []string{"A-1-2"}) {
		t.Errorf("the other account's holds = %v (%v), want A-1-2 still", seats, err)
	}

	// The PG's payment page posted with 1 won instead of 150,000; the PG
	// takes it and tells the app before the buyer is back.
	u, _ := url.Parse(o.CheckoutURL)
	form := u.Query()
	form.Set("amount", "1")
	form.Set("action", "pay")
	form.Set("scenario", sandbox.ScenarioWebhookBeforeRedirect)
	resp = c.do("POST", "/sandbox-pg/checkout", form)
	wantStatus(t, resp, http.StatusSeeOther)
	success := strings.TrimPrefix(resp.Header.Get("Location"), app.URL)
	wantStatus(t, c.do("GET", success, nil), http.StatusSeeOther)
	app.Sandbox.Wait()
	decodeJSON(t, c.do("GET", "/orders/"+o.OrderID, nil, "Accept: application/json"), &got)
	if got.Status == "CONFIRMED" || len(got.Tickets) != 0 || got.Failure != boxoffice.ReasonAmountMismatch {
		t.Errorf("order %+v, want it not confirmed, no tickets, failed for the amount", got)
	}
	if n := app.queryInt(t, `SELECT count(*) FROM sold_seat`); n != 0 {
		t.Errorf("%d seats sold, want none", n)
	}
	waitFor(t, "the 1-won payment refunded", func() bool {
		p, err := app.PG.GetPayment(context.Background(), paymentKeyOf(t, success))
		return err == nil && p.Status == boxoffice.PaymentStatusCanceled
	})
}
