package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
)

// Text with HTML in it, as an admin or a fan could type it: each would run
// a script if a page wrote it as markup.
const (
	xssTitle       = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	xssVenue       = `<svg onload=alert(3)>Hall</svg>`
	xssDescription = `</textarea><iframe src="javascript:alert(4)"></iframe>`
	xssGrade       = `<b onmouseover=alert(5)>VIP</b>`
	xssName        = `"><img src=x onerror=alert(6)>Kim`
	// xssSection is a section name that the importers refuse (see
	// boxoffice.ParseSeatCSV) but that a venue made before that rule, or by
	// hand, may hold: the pages must draw it as text all the same.
	xssSection = `"><svg onload=alert(7)>`
)

// noInjectedMarkup fails if the page holds markup that the data above would
// make: an event handler attribute (on...), an inline script, an iframe, an
// img of the data's (src=x) or a b element, anywhere, the content of
// <template> (the seat map's shadow root) included.
func noInjectedMarkup(t *testing.T, page string, d *goquery.Document) {
	t.Helper()
	d.Find("*").Each(func(_ int, s *goquery.Selection) {
		n := s.Get(0)
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				t.Errorf("%s: <%s> has the event handler %s=%q", page, n.Data, a.Key, a.Val)
			}
		}
		switch n.Data {
		case "script":
			if s.AttrOr("src", "") == "" {
				t.Errorf("%s: an inline <script>: %q", page, s.Text())
			}
		case "iframe", "b":
			t.Errorf("%s: an injected <%s>", page, n.Data)
		case "img":
			if s.AttrOr("src", "") == "x" {
				t.Errorf("%s: an injected <img src=x>", page)
			}
		}
	})
}

// page fetches path as HTML with the client, checks its status and that
// the data's markup stayed text, and returns the document.
func page(t *testing.T, c *client, path string, status int, headers ...string) *goquery.Document {
	t.Helper()
	resp := c.do("GET", path, nil, headers...)
	wantStatus(t, resp, status)
	d := doc(t, resp)
	noInjectedMarkup(t, path, d)
	return d
}

// wantSame checks that what a page shows reads back as the data, letter for
// letter.
func wantSame(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want the text %q", what, got, want)
	}
}

func wantContains(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s = %q, want it to hold the text %q", what, got, want)
	}
}

// Event names, venue names, grade names, account names and seat labels
// with HTML in them read as text on every page that shows them, in every
// attribute that carries them, and in the JSON answers; none of them adds
// an element or an event handler to a page.
func TestHTMLInData_RendersAsText(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ctx := context.Background()
	admin := app.newAdmin(t)

	seats := generate(t,
		boxoffice.SectionSpec{Name: "A", Rows: 1, SeatsPerRow: 3, Grade: "R"},
		boxoffice.SectionSpec{Name: "B & 'C'", Rows: 1, SeatsPerRow: 2, Grade: "S"})
	v, err := (&store.Venues{DB: app.DB}).CreateVenue(ctx, xssVenue, seats)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.DB.Pool.Exec(ctx, `UPDATE venue_seat SET section = $2, label = $2 || '-' || row_label || '-' || number
		WHERE venue_id = $1 AND section = 'A'`, v.ID, xssSection); err != nil {
		t.Fatal(err)
	}
	label := boxoffice.SeatLabel(xssSection, "1", "1")
	now := time.Now().UTC().Truncate(time.Second)
	in := boxoffice.NewEventInput()
	in.VenueID, in.Title, in.Description = v.ID, boxoffice.Text{"en": xssTitle}, boxoffice.Text{"en": xssDescription}
	in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = now.Add(-time.Hour), now.Add(24*time.Hour), now.Add(48*time.Hour)
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": xssGrade}, Price: 150000, Color: "#c0392b"}, {Code: "S", Name: boxoffice.Text{"en": "S seat"}, Price: 90000, Color: "#2980b9"}}
	e, err := app.Srv.Events.CreateEvent(ctx, in)
	if err == nil {
		e, err = app.Srv.Events.PublishEvent(ctx, e.ID)
	}
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(e.ID)

	fan := app.newClient(t)
	wantStatus(t, fan.do("POST", "/signup", signupForm("fan@example.com", "correct horse", xssName)), http.StatusSeeOther)

	d := page(t, fan, "/", http.StatusOK)
	wantSame(t, "home: event link", testid(d, "event-link"), xssTitle)
	wantContains(t, "home: event card", d.Find(`[data-testid="event-card"]`).Text(), xssVenue)
	wantSame(t, "nav: account name", testid(d, "nav-account"), xssName)

	d = page(t, fan, "/events/"+id, http.StatusOK)
	wantSame(t, "event page: title", testid(d, "event-title"), xssTitle)
	wantSame(t, "event page: venue", testid(d, "event-venue"), xssVenue)
	wantContains(t, "event page: <title>", d.Find("title").Text(), xssTitle)
	wantContains(t, "event page", d.Find("main").Text(), xssDescription)
	wantContains(t, "event page", d.Find("main").Text(), xssGrade)

	var ev struct {
		Title, Venue string
		Grades       []struct{ Name string }
	}
	decodeJSON(t, fan.do("GET", "/events/"+id, nil, "Accept: application/json"), &ev)
	if ev.Title != xssTitle || ev.Venue != xssVenue || len(ev.Grades) != 2 || ev.Grades[0].Name != xssGrade {
		t.Errorf("event JSON = %+v, want the title, venue and grade name as sent", ev)
	}
	var home struct {
		Events []struct{ Title, Venue string }
	}
	decodeJSON(t, fan.do("GET", "/", nil, "Accept: application/json"), &home)
	if len(home.Events) != 1 || home.Events[0].Title != xssTitle || home.Events[0].Venue != xssVenue {
		t.Errorf("home JSON = %+v, want the title and venue as sent", home)
	}

	wantStatus(t, fan.do("POST", "/events/"+id+"/queue", url.Values{}), http.StatusSeeOther)
	d = page(t, fan, "/events/"+id+"/queue", http.StatusOK)
	wantSame(t, "waiting room: event link", testid(d, "queue-event"), xssTitle)
	app.admit(t, boxoffice.AdmissionSettings{EventID: e.ID, Rate: 10, TokenTTL: 10 * time.Minute})

	d = page(t, fan, "/events/"+id+"/seats", http.StatusOK)
	wantSame(t, "seat map: title", testid(d, "seatmap-title"), xssTitle)
	wantContains(t, "seat map: heading", d.Find(".map-head").Text(), xssVenue)
	wantSame(t, "seat map: section outline", d.Find("polygon.section-shape").First().AttrOr("data-section", ""), xssSection)
	seat := d.Find(`circle[data-id]`).First()
	wantSame(t, "seat map: seat's data-id", seat.AttrOr("data-id", ""), label)
	wantContains(t, "seat map: seats' description", seat.Parent().AttrOr("data-desc", ""), "Section "+xssSection+", row <r>, seat <n>, "+xssGrade)
	wantContains(t, "seat map: section names", d.Find(".section-labels").Text(), xssSection)
	wantContains(t, "seat map: legend", testid(d, "legend-grades"), xssGrade)
	link := d.Find(`[data-testid="sections"] a`).First()
	wantSame(t, "seat list: section link", strings.TrimSpace(link.Text()), xssSection)
	wantSame(t, "seat list: section link's testid", link.AttrOr("data-testid", ""), "section-"+xssSection)
	href := link.AttrOr("href", "")
	if u, err := url.Parse(href); err != nil || u.Query().Get("section") != xssSection {
		t.Errorf("seat list: section link %q, want ?section= the section's name", href)
	}

	d = page(t, fan, href, http.StatusOK)
	wantSame(t, "section list: hidden section", d.Find(`[data-testid="list-form"] input[name="section"]`).AttrOr("value", ""), xssSection)
	wantSame(t, "section list: seat checkbox", d.Find(`[data-testid="list-form"] input[name="seat"]`).First().AttrOr("value", ""), label)

	var m seatMapJSON
	decodeJSON(t, fan.do("GET", "/events/"+id+"/seats", nil, "Accept: application/json"), &m)
	if m.Seats[0].ID != label || m.Seats[0].Section != xssSection {
		t.Errorf("seat map JSON: first seat %+v, want id %q in section %q", m.Seats[0], label, xssSection)
	}

	resp := fan.do("POST", "/events/"+id+"/holds", url.Values{"seat": {label}, "section": {xssSection}})
	wantStatus(t, resp, http.StatusSeeOther)
	d = page(t, fan, resp.Header.Get("Location"), http.StatusOK)
	wantContains(t, "hold notice", testid(d, "hold-notice"), "You hold 1 seat")
	wantSame(t, "hold panel: held seat", d.Find(`[data-testid="held-seats"] li`).AttrOr("data-seat", ""), label)
	wantContains(t, "hold panel: held seat", testid(d, "held-seats"), "Section "+xssSection)
	wantContains(t, "hold panel: release button", d.Find(`[data-testid="held-seats"] button`).AttrOr("aria-label", ""), xssSection)
	d = page(t, fan, "/events/"+id+"/seats", http.StatusOK, "HX-Request: true")
	wantSame(t, "hold panel (htmx): held seat", d.Find(`[data-testid="held-seats"] li`).AttrOr("data-seat", ""), label)
	var mine []string
	if err := json.Unmarshal([]byte(d.Find("[data-mine]").AttrOr("data-mine", "")), &mine); err != nil || len(mine) != 1 || mine[0] != label {
		t.Errorf("hold panel: data-mine %q (%v), want the held label", d.Find("[data-mine]").AttrOr("data-mine", ""), err)
	}

	resp = fan.do("POST", "/events/"+id+"/orders", url.Values{})
	wantStatus(t, resp, http.StatusSeeOther)
	checkout := resp.Header.Get("Location")
	d = page(t, fan, strings.TrimPrefix(checkout, app.URL), http.StatusOK)
	wantSame(t, "sandbox PG: order name", testid(d, "pg-order-name"), xssTitle+" × 1")
	wantSame(t, "sandbox PG: hidden order name", d.Find(`input[name="orderName"]`).AttrOr("value", ""), xssTitle+" × 1")
	orderID := d.Find(`input[name="orderId"]`).AttrOr("value", "")
	o := orderAnswer{OrderID: orderID, CheckoutURL: checkout}

	d = page(t, fan, "/orders/"+orderID, http.StatusOK)
	wantSame(t, "order page: title", testid(d, "order-title"), xssTitle)
	wantSame(t, "order page: seat", testid(d, "order-item-seat"), "Section "+xssSection+", row 1, seat 1")
	wantSame(t, "order page: grade", testid(d, "order-item-grade"), xssGrade+" (R)")
	wantSame(t, "order page: data-seat", d.Find(`[data-testid="order-item"]`).AttrOr("data-seat", ""), label)

	success := app.payAtSandbox(t, fan, o, "pay", sandbox.ScenarioWebhookNever)
	wantStatus(t, fan.do("GET", success, nil), http.StatusSeeOther)
	d = page(t, fan, "/orders/"+orderID, http.StatusOK)
	wantSame(t, "ticket: seat", testid(d, "ticket-seat"), "Section "+xssSection+", row 1, seat 1")
	wantSame(t, "ticket: grade", testid(d, "ticket-grade"), xssGrade+" (R)")
	wantSame(t, "ticket: event", testid(d, "ticket-event"), xssTitle)
	wantSame(t, "ticket: venue", testid(d, "ticket-venue"), xssVenue)
	wantSame(t, "ticket: data-seat", d.Find(`[data-testid="ticket"]`).AttrOr("data-seat", ""), label)
	wantSame(t, "ticket: QR code's alt", d.Find(`[data-testid="ticket-qr"]`).AttrOr("alt", ""), "QR code of the ticket for Section "+xssSection+", row 1, seat 1")
	var order orderAnswer
	decodeJSON(t, fan.do("GET", "/orders/"+orderID, nil, "Accept: application/json"), &order)
	if len(order.Seats) != 1 || order.Seats[0] != label || len(order.Tickets) != 1 || order.Tickets[0].Seat != label {
		t.Errorf("order JSON = %+v, want seat and ticket %q", order, label)
	}
	d = page(t, fan, "/me/orders", http.StatusOK)
	wantSame(t, "my orders: event", strings.TrimSpace(d.Find(`[data-testid="orders-row"] a`).Text()), xssTitle)
	var list struct {
		Orders []struct {
			EventTitle string `json:"event_title"`
		}
	}
	decodeJSON(t, fan.do("GET", "/me/orders", nil, "Accept: application/json"), &list)
	if len(list.Orders) != 1 || list.Orders[0].EventTitle != xssTitle {
		t.Errorf("my orders JSON = %+v, want the title as sent", list)
	}

	d = page(t, admin, "/admin/events", http.StatusOK)
	wantSame(t, "admin events: title", testid(d, "event-edit-link"), xssTitle)
	wantContains(t, "admin events: venue", d.Find("table").Text(), xssVenue)
	d = page(t, admin, "/admin/events/"+id+"/edit", http.StatusOK)
	wantSame(t, "event form: title", d.Find(`input[name="title.en"]`).AttrOr("value", ""), xssTitle)
	wantSame(t, "event form: description", d.Find(`textarea[name="description.en"]`).Text(), xssDescription)
	wantSame(t, "event form: grade name", gradeRowValue(d, 0, "name.en"), xssGrade)
	wantContains(t, "event form: venue choice", d.Find(`select[name="venue_id"]`).Text(), xssVenue)
	d = page(t, admin, "/admin/events/new?"+url.Values{"venue_id": {fmt.Sprint(v.ID)}, "title.en": {xssTitle}}.Encode(), http.StatusOK)
	wantSame(t, "new event form: title", d.Find(`input[name="title.en"]`).AttrOr("value", ""), xssTitle)
	d = page(t, admin, "/admin/events/"+id+"/live", http.StatusOK)
	wantContains(t, "live page", d.Find("h1").Text(), xssTitle)
	d = page(t, admin, "/admin/venues", http.StatusOK)
	wantSame(t, "admin venues: name", testid(d, "venue-link"), xssVenue)
	d = page(t, admin, fmt.Sprintf("/admin/venues/%d", v.ID), http.StatusOK)
	wantSame(t, "venue page: name", testid(d, "venue-name"), xssVenue)
	wantSame(t, "venue page: rename field", d.Find(`[data-testid="rename-name"]`).AttrOr("value", ""), xssVenue)
	wantContains(t, "venue page: events", testid(d, "venue-event-list"), xssTitle)
	typed := xssVenue + strings.Repeat("x", boxoffice.MaxVenueNameLen)
	resp = admin.do("POST", fmt.Sprintf("/admin/venues/%d/name", v.ID), url.Values{"name": {typed}})
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	d = doc(t, resp)
	noInjectedMarkup(t, "refused rename", d)
	wantSame(t, "refused rename: the name typed", d.Find(`[data-testid="rename-name"]`).AttrOr("value", ""), typed)
	page(t, admin, "/admin", http.StatusOK)
}
