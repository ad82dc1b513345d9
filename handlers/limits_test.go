package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// snapshot is what a refused request must leave as it was: every table's
// rows, and Redis's keys other than sessions (a refused form post may
// leave its reason as a flash in the session). It also fails the test if
// Redis holds a key over 1 KiB or a value over 4 KiB: a long input must not
// end up there.
func (a *testApp) snapshot(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, table := range []string{"account", "venue", "venue_seat", "event", "grade", "event_seat", "orders", "order_item",
		"payment", "sold_seat", "purchase_count", "ticket", "outbox", "sandbox_pg.sandbox_pg_payment", "sandbox_pg.sandbox_pg_idempotency", "sandbox_pg.sandbox_pg_webhook"} {
		var sum string
		err := a.DB.Pool.QueryRow(ctx, `SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM `+table+` t`).Scan(&sum)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", table, sum)
	}
	keys, err := storetest.Keys(ctx, a.Redis, "*"+a.Redis.Prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if len(k) > 1<<10 {
			t.Errorf("Redis key of %d bytes: %.60s...", len(k), k)
		}
		if n, err := a.Redis.Client.MemoryUsage(ctx, k).Result(); err == nil && n > 4<<10 {
			t.Errorf("Redis key %s holds %d bytes", k, n)
		}
		if !strings.Contains(k, "session:") {
			fmt.Fprintln(&b, k)
		}
	}
	return b.String()
}

// answerText is what a person reads in an answer: a JSON error's message
// and field reasons, or an HTML page's text.
func answerText(t *testing.T, resp *http.Response, body []byte) string {
	t.Helper()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s %s: JSON answer: %v", resp.Request.Method, resp.Request.URL.Path, err)
		}
		return fmt.Sprint(m["message"], " ", m["fields"])
	}
	d, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return d.Text()
}

// Every form field and query parameter a person or a script can send has a
// limit on its length and a check of its shape: over-long and malformed
// values are refused with a 4xx status and a sentence that says why, an
// answer never echoes a long value it did not need to show back in a form
// field, and nothing changes (no row, no Redis key, no long key or value).
// The request-size limits are TestBodyTooLarge's; NUL bytes and invalid
// UTF-8, TestUnreadableInput's; redirect targets (next), TestLogin's.
// passwordTooLong is the sign-up's refusal of a password over 72 bytes,
// which 40 accented letters are.
const passwordTooLong = "Your password is too long: use at most 72 bytes (about 72 plain letters or digits, fewer with accents or other scripts)."

func TestInputLimits(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	venue := adminVenue(t, app, "Hall")
	draft := adminEvent(t, app, venue.ID, "Draft night")
	e := app.newSeatEvent(t)
	fan, _ := app.newFan(t, "fan@example.com", e.ID)
	buyer, _, o := app.checkout(t, "buyer@example.com", "A-1-1")
	ticketless := "/orders/" + o.OrderID + "/tickets/"

	const n = 10_000 // over every field's limit, under the body's (64 KiB)
	long, digits := strings.Repeat("x", n), strings.Repeat("9", n)
	eventForm := formValues(t, doc(t, admin.do("GET", fmt.Sprintf("/admin/events/new?venue_id=%d", venue.ID), nil)), `[data-testid="event-form"]`)
	eventForm.Set("title.en", "Gala")
	eventForm.Set("queue_opens_at", "2030-12-01T20:00")
	eventForm.Set("sale_ends_at", "2030-12-31T18:00")
	eventForm.Set("starts_at", "2030-12-31T22:30")
	eventForm.Set("grades[0].price", "150000")
	eventForm.Set("grades[1].price", "90000")
	venueForm := url.Values{"name": {"New hall"}, "section_rows": {"1"},
		"sections[0].name": {"A"}, "sections[0].rows": {"2"}, "sections[0].seats_per_row": {"3"}, "sections[0].grade": {"R"}}
	with := func(f url.Values, kv ...string) url.Values {
		g := url.Values{}
		for k, vs := range f {
			g[k] = slices.Clone(vs)
		}
		for i := 0; i < len(kv); i += 2 {
			g.Set(kv[i], kv[i+1])
		}
		return g
	}
	events := fmt.Sprintf("/events/%d", e.ID)
	success := func(key, orderID, amount string) string {
		return "/payments/success?" + url.Values{"paymentKey": {key}, "orderId": {orderID}, "amount": {amount}}.Encode()
	}
	fail := func(code, message, orderID string) string {
		return "/payments/fail?" + url.Values{"code": {code}, "message": {message}, "orderId": {orderID}}.Encode()
	}
	checkout := url.Values{"orderId": {"order-123"}, "amount": {"1000"}, "orderName": {"Gala × 1"},
		"successUrl": {app.URL + "/payments/success"}, "failUrl": {app.URL + "/payments/fail"}}
	webhook := func(key, orderID string) func() *http.Response {
		return func() *http.Response {
			body := fmt.Sprintf(`{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":%q,"orderId":%q,"status":"DONE"}}`, key, orderID)
			resp, err := http.Post(app.URL+"/payments/webhook", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			return resp
		}
	}
	visitor := app.newClient(t)

	tests := []struct {
		name   string
		c      *client
		method string
		path   string
		form   url.Values
		status int
		want   string // in the answer's message, reasons or text
		html   bool   // ask for a page, not JSON
		echo   bool   // a form shown again may hold the value typed
		send   func() *http.Response
	}{
		// The address itself.
		{name: "URI", c: visitor, method: "GET", path: "/?q=" + strings.Repeat("x", handlers.MaxURIBytes), status: 400, want: "The address is too long."},

		// Accounts.
		{name: "SignupEmailLong", c: visitor, method: "POST", path: "/signup", form: signupForm(long+"@example.com", "correct horse", "Kim"), status: 422, want: "That e-mail address is too long."},
		{name: "SignupEmailMalformed", c: visitor, method: "POST", path: "/signup", form: signupForm("kim-at-example.com", "correct horse", "Kim"), status: 422, want: "That does not look like an e-mail address."},
		{name: "SignupPasswordLong", c: visitor, method: "POST", path: "/signup", form: signupForm("kim@example.com", long, "Kim"), status: 422, want: passwordTooLong},
		{name: "SignupPasswordAccents", c: visitor, method: "POST", path: "/signup", form: signupForm("kim@example.com", strings.Repeat("é", 40), "Kim"), status: 422, want: passwordTooLong},
		{name: "SignupNameLong", c: visitor, method: "POST", path: "/signup", form: signupForm("kim@example.com", "correct horse", long), status: 422, want: "Use at most 100 characters for your name."},
		{name: "LoginEmailLong", c: visitor, method: "POST", path: "/login", form: url.Values{"email": {long}, "password": {"correct horse"}}, status: 422, want: "That e-mail address is too long."},
		{name: "LoginPasswordLong", c: visitor, method: "POST", path: "/login", form: url.Values{"email": {"fan@example.com"}, "password": {long}}, status: 422, want: "That password is too long: passwords have at most 72 bytes (about 72 plain letters or digits, fewer with accents or other scripts)."},

		// The admin's event form (the edit form is read by the same code).
		{name: "EventTitleLong", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "title.en", long), status: 422, want: "Use at most 200 characters for the title.", echo: true},
		{name: "EventEditTitleLong", c: admin, method: "POST", path: fmt.Sprintf("/admin/events/%d/edit", draft.ID), form: with(eventForm, "title.en", long), status: 422, want: "Use at most 200 characters for the title.", echo: true},
		{name: "EventDescriptionLong", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "description.en", long), status: 422, want: "Use at most 5000 characters for the description.", echo: true},
		{name: "EventTimeZoneLong", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "time_zone", long), status: 422, want: `Unknown time zone "` + long[:boxoffice.MaxQuoted] + `…"`, echo: true},
		{name: "EventTimeZoneMalformed", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "time_zone", "Mars/Olympus_Mons"), status: 422, want: `Unknown time zone "Mars/Olympus_Mons"`},
		{name: "EventTimeLong", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "starts_at", long), status: 422, want: "Enter a date and time such as", echo: true},
		{name: "EventTimeMalformed", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "queue_opens_at", "tomorrow"), status: 422, want: "Enter a date and time such as"},
		{name: "EventCurrencyLong", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "currency", long), status: 422, want: "Use an ISO 4217 currency code such as KRW.", echo: true},
		{name: "EventCurrencyMalformed", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "currency", "WON"), status: 422, want: "Use an ISO 4217 currency code such as KRW."},
		{name: "EventLimitLong", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "max_per_account", digits), status: 422, want: "Enter a whole number.", echo: true},
		{name: "EventLimitRange", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "max_per_account", "21"), status: 422, want: "Allow 1 to 20 tickets per account."},
		{name: "EventHoldTTLMalformed", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "hold_ttl", "5m"), status: 422, want: "Enter a whole number."},
		{name: "EventHoldTTLRange", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "hold_ttl", "-5"), status: 422, want: "Hold seats for 1 to 3600 whole seconds."},
		{name: "EventTokenTTLRange", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "token_ttl", "7201"), status: 422, want: "Let entry tokens last 1 to 7200 whole seconds."},
		{name: "EventRateRange", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "admission_rate", "0"), status: 422, want: "Admit 1 to 100000 fans per second."},
		{name: "EventMaxShoppersRange", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "max_shoppers", "-1"), status: 422, want: "Use 0 for no cap, or a positive number."},
		{name: "EventVenueMalformed", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "venue_id", long), status: 422, want: "Choose a venue."},
		{name: "EventGradeCodeLong", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "grades[0].code", long), status: 422, want: "Use 1 to 8 letters or digits for the grade code.", echo: true},
		{name: "EventGradeNameLong", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "grades[0].name.en", long), status: 422, want: "Use 1 to 60 characters for the grade name.", echo: true},
		{name: "EventGradePriceLong", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "grades[0].price", digits), status: 422, want: "Enter the price as a whole number of the currency's smallest unit.", echo: true},
		{name: "EventGradeColorMalformed", c: admin, method: "POST", path: "/admin/events", form: with(eventForm, "grades[0].color", "red"), status: 422, want: "Use a colour such as #c0392b."},

		// The admin's venues.
		{name: "VenueNameLong", c: admin, method: "POST", path: "/admin/venues", form: with(venueForm, "name", long), status: 422, want: "Use 1 to 200 characters for the venue name.", echo: true},
		{name: "VenueSectionLong", c: admin, method: "POST", path: "/admin/venues", form: with(venueForm, "sections[0].name", long), status: 422, want: "The section name is longer than 40 characters.", echo: true},
		{name: "VenueSectionMarkup", c: admin, method: "POST", path: "/admin/venues", form: with(venueForm, "sections[0].name", `<b>A</b>`), status: 422, want: "The section name may not contain the characters"},
		{name: "VenueRowsLong", c: admin, method: "POST", path: "/admin/venues", form: with(venueForm, "sections[0].rows", digits), status: 422, want: "Enter a whole number.", echo: true},
		{name: "VenueRowsRange", c: admin, method: "POST", path: "/admin/venues", form: with(venueForm, "sections[0].rows", "201"), status: 422, want: "Use 1 to 200 rows."},
		{name: "VenueSeatsRange", c: admin, method: "POST", path: "/admin/venues", form: with(venueForm, "sections[0].seats_per_row", "0"), status: 422, want: "Use 1 to 200 seats per row."},
		{name: "VenueGradeLong", c: admin, method: "POST", path: "/admin/venues", form: with(venueForm, "sections[0].grade", long), status: 422, want: `The grade must be 1 to 8 letters or digits, not "` + long[:boxoffice.MaxQuoted] + `…".`, echo: true},
		{name: "VenueRenameLong", c: admin, method: "POST", path: fmt.Sprintf("/admin/venues/%d/name", venue.ID), form: url.Values{"name": {long}}, status: 422, want: "Use 1 to 200 characters for the venue name.", echo: true},
		{name: "VenueImportNameLong", status: 422, want: "Use 1 to 200 characters for the venue name.", echo: true, send: func() *http.Response {
			return admin.upload("/admin/venues/import", long, "hall.csv", []byte("A,1,1,R\n"))
		}},
		{name: "VenueImportRowLong", status: 422, want: `row must be a whole number from 1 to 9999 without a leading zero, not "` + digits[:boxoffice.MaxQuoted] + `…"`, send: func() *http.Response {
			return admin.upload("/admin/venues/import", "Hall", "hall.csv", []byte("A,"+digits+",1,R\n"))
		}},

		// The admission controls.
		{name: "AdmissionPausedLong", c: admin, method: "POST", path: fmt.Sprintf("/admin/events/%d/admission", e.ID), form: url.Values{"paused": {long}}, status: 422, want: "Choose pause or resume."},
		{name: "AdmissionPausedMalformed", c: admin, method: "POST", path: fmt.Sprintf("/admin/events/%d/admission", e.ID), form: url.Values{"paused": {"maybe"}}, status: 422, want: "Choose pause or resume."},
		{name: "AdmissionRateLong", c: admin, method: "POST", path: fmt.Sprintf("/admin/events/%d/admission", e.ID), form: url.Values{"rate": {digits}}, status: 422, want: "Enter a whole number of fans per second"},
		{name: "AdmissionRateRange", c: admin, method: "POST", path: fmt.Sprintf("/admin/events/%d/admission", e.ID), form: url.Values{"rate": {"0"}}, status: 422, want: "Admit 1 to 100000 fans per second."},

		// A fan's pages: events, the seat map, holds.
		{name: "EventIDLong", c: fan, method: "GET", path: "/events/" + digits, status: 404, want: "There is no such event."},
		{name: "EventIDMalformed", c: fan, method: "GET", path: "/events/-1", status: 404, want: "There is no such event."},
		{name: "SectionLong", c: fan, method: "GET", path: events + "/seats?section=" + long, html: true, status: 400, want: "There is no such section."},
		{name: "SectionUnknown", c: fan, method: "GET", path: events + "/seats?section=Z", html: true, status: 400, want: "There is no such section."},
		{name: "HoldSeatLong", c: fan, method: "POST", path: events + "/holds", form: url.Values{"seat": {long}}, status: 400, want: "That is not a seat."},
		{name: "HoldSeatMalformed", c: fan, method: "POST", path: events + "/holds", form: url.Values{"seat": {"A-1-1", "A 1 2"}}, status: 400, want: "That is not a seat."},
		{name: "HoldSeatsTooMany", c: fan, method: "POST", path: events + "/holds", form: url.Values{"seat": {"A-1-1", "A-1-2", "A-1-3", "A-1-4", "A-1-5", "A-1-6"}}, status: 400, want: "You may choose at most 5 seats."},
		{name: "HoldSectionLong", c: fan, method: "POST", path: events + "/holds", form: url.Values{"seat": {"A-1-1"}, "section": {long}}, html: true, status: 400, want: "There is no such section."},
		{name: "ReleaseSeatLong", c: fan, method: "DELETE", path: events + "/holds/" + long, status: 400, want: "That is not a seat."},

		// Orders, tickets and the PG's redirects.
		{name: "OrderIDLong", c: buyer, method: "GET", path: "/orders/" + long, status: 404, want: "There is no such order."},
		{name: "OrderIDMalformed", c: buyer, method: "GET", path: "/orders/a.b", status: 404, want: "There is no such order."},
		{name: "TicketIDLong", c: buyer, method: "GET", path: ticketless + long + "/qr.png", status: 404, want: "There is no such ticket."},
		{name: "SuccessPaymentKeyLong", c: buyer, method: "GET", path: success(long, o.OrderID, "150000"), status: 400, want: "This payment link is incomplete or malformed."},
		{name: "SuccessOrderIDLong", c: buyer, method: "GET", path: success("tsbx1", long, "150000"), status: 400, want: "This payment link is incomplete or malformed."},
		{name: "SuccessOrderIDMalformed", c: buyer, method: "GET", path: success("tsbx1", "../x", "150000"), status: 400, want: "This payment link is incomplete or malformed."},
		{name: "SuccessAmountLong", c: buyer, method: "GET", path: success("tsbx1", o.OrderID, digits), status: 400, want: "This payment link is incomplete or malformed."},
		{name: "SuccessAmountNegative", c: buyer, method: "GET", path: success("tsbx1", o.OrderID, "-150000"), status: 400, want: "This payment link is incomplete or malformed."},
		{name: "FailCodeLong", c: buyer, method: "GET", path: fail(long, "", o.OrderID), status: 400, want: "This payment link is incomplete or malformed."},
		{name: "FailCodeMalformed", c: buyer, method: "GET", path: fail("<b>X</b>", "", o.OrderID), status: 400, want: "This payment link is incomplete or malformed."},
		{name: "FailMessageLong", c: buyer, method: "GET", path: fail("PAY_PROCESS_CANCELED", long, o.OrderID), status: 400, want: "This payment link is incomplete or malformed."},
		{name: "FailOrderIDLong", c: buyer, method: "GET", path: fail("PAY_PROCESS_CANCELED", "", long), status: 404, want: "There is no such order."},
		{name: "WebhookPaymentKeyLong", status: 400, want: "The webhook body is not a payment event.", send: webhook(long, o.OrderID)},
		{name: "WebhookOrderIDLong", status: 400, want: "The webhook body is not a payment event.", send: webhook("tsbx1", long)},

		// The sandbox PG's checkout (the page and its form).
		{name: "PGOrderIDLong", c: buyer, method: "GET", path: "/sandbox-pg/checkout?" + with(checkout, "orderId", long).Encode(), status: 400, want: "The order id must be 6 to 64 letters"},
		{name: "PGAmountLong", c: buyer, method: "GET", path: "/sandbox-pg/checkout?" + with(checkout, "amount", digits).Encode(), status: 400, want: "The amount must be a whole number of won above zero."},
		{name: "PGOrderNameLong", c: buyer, method: "GET", path: "/sandbox-pg/checkout?" + with(checkout, "orderName", long).Encode(), status: 400, want: "The order needs a name of at most 100 characters."},
		{name: "PGSuccessURLLong", c: buyer, method: "GET", path: "/sandbox-pg/checkout?" + with(checkout, "successUrl", app.URL+"/"+long).Encode(), status: 400, want: "The success URL must be an absolute http or https URL of at most 2,048 characters."},
		{name: "PGFailURLMalformed", c: buyer, method: "GET", path: "/sandbox-pg/checkout?" + with(checkout, "failUrl", "javascript:alert(1)").Encode(), status: 400, want: "The failure URL must be an absolute http or https URL"},
		{name: "PGPostFailURLLong", c: buyer, method: "POST", path: "/sandbox-pg/checkout", form: with(checkout, "failUrl", app.URL+"/"+long, "action", "pay"), status: 400, want: "The failure URL must be an absolute http or https URL of at most 2,048 characters."},
		{name: "PGPostActionLong", c: buyer, method: "POST", path: "/sandbox-pg/checkout", form: with(checkout, "action", long), status: 400, want: "Choose Pay or Decline."},
		{name: "PGPostScenarioLong", c: buyer, method: "POST", path: "/sandbox-pg/checkout", form: with(checkout, "action", "pay", "scenario", long), status: 400, want: "Choose one of the listed test scenarios."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := app.snapshot(t)
			var resp *http.Response
			switch {
			case tt.send != nil:
				resp = tt.send()
			case tt.html:
				resp = tt.c.do(tt.method, tt.path, tt.form)
			default:
				resp = tt.c.do(tt.method, tt.path, tt.form, "Accept: application/json")
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body: %.300s", resp.StatusCode, tt.status, body)
			}
			if text := answerText(t, resp, body); !strings.Contains(text, tt.want) {
				t.Errorf("the answer says %.300q, want it to say %q", text, tt.want)
			}
			if !tt.echo && (bytes.Contains(body, []byte(long[:200])) || bytes.Contains(body, []byte(digits[:200]))) {
				t.Errorf("the answer (%d bytes) echoes the long value", len(body))
			}
			if after := app.snapshot(t); after != before {
				t.Errorf("a refused request changed the data:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}
