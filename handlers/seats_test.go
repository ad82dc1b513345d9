package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
)

// seatEventSeats is the number of seats of newSeatEvent's events.
const seatEventSeats = 3*6 + 4 + 2

// newSeatEvent creates a venue and an on-sale event on it with the default
// limit (5) and hold TTL: section A (3 rows of 6, grade R at ₩150,000),
// "Box B" (1 row of 4) and "C/D" (1 row of 2), both grade S at ₩90,000.
func (a *testApp) newSeatEvent(t *testing.T) *boxoffice.Event {
	t.Helper()
	ctx := context.Background()
	seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{
		{Name: "A", Rows: 3, SeatsPerRow: 6, Grade: "R"},
		{Name: "Box B", Rows: 1, SeatsPerRow: 4, Grade: "S"},
		{Name: "C/D", Rows: 1, SeatsPerRow: 2, Grade: "S"},
	})
	if err != nil {
		t.Fatal(err)
	}
	venue, err := (&store.Venues{DB: a.DB}).CreateVenue(ctx, "Test Hall", seats)
	if err != nil {
		t.Fatalf("create venue: %v", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	in := boxoffice.NewEventInput()
	in.VenueID, in.Title = venue.ID, boxoffice.Text{"en": "Test Night"}
	in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = now.Add(-time.Hour), now.Add(24*time.Hour), now.Add(48*time.Hour)
	in.Grades = []boxoffice.Grade{
		{Code: "R", Name: boxoffice.Text{"en": "R seat"}, Price: 150000, Color: "#c0392b"},
		{Code: "S", Name: boxoffice.Text{"en": "S seat"}, Price: 90000, Color: "#2980b9"},
	}
	e, err := a.Srv.Events.CreateEvent(ctx, in)
	if err != nil {
		t.Fatalf("create event: %v", err)
	}
	if e, err = a.Srv.Events.PublishEvent(ctx, e.ID); err != nil {
		t.Fatalf("publish event: %v", err)
	}
	return e
}

// newFan returns a logged-in fan who joined the event's queue and was
// admitted, so that the session holds a live entry token.
func (a *testApp) newFan(t *testing.T, email string, eventID int64) (*client, *boxoffice.Account) {
	t.Helper()
	c, acct := a.newAccount(t, email, boxoffice.RoleFan)
	wantStatus(t, c.do("POST", "/events/"+strconv.FormatInt(eventID, 10)+"/queue", url.Values{}), http.StatusSeeOther)
	r := a.admit(t, boxoffice.AdmissionSettings{EventID: eventID, Rate: 1000, TokenTTL: 10 * time.Minute})
	if !slices.Contains(r.Admitted, acct.ID) {
		t.Fatalf("admitted %v, want account %d among them", r.Admitted, acct.ID)
	}
	return c, acct
}

// hold holds seats for the client through the JSON API, failing the test
// unless it answers 200.
func hold(t *testing.T, c *client, eventID int64, seats ...string) {
	t.Helper()
	wantStatus(t, c.do("POST", holdsPath(eventID), url.Values{"seat": seats}, "Accept: application/json"), http.StatusOK)
}

func seatsPath(eventID int64) string { return "/events/" + strconv.FormatInt(eventID, 10) + "/seats" }
func holdsPath(eventID int64) string { return "/events/" + strconv.FormatInt(eventID, 10) + "/holds" }

// decodeJSON reads a JSON body into v.
func decodeJSON(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("decode JSON of %s: %v", resp.Request.URL.Path, err)
	}
}

// seatMapJSON is GET /events/{id}/seats as JSON.
type seatMapJSON struct {
	Seats []struct {
		ID, Section, Row, Number, Grade, Status string
		Price                                   int64
	}
	Holds struct {
		Seats []string
		TTLMs int64 `json:"ttl_ms"`
	}
	Limit, Owned int
}

func getSeatMap(t *testing.T, c *client, eventID int64) seatMapJSON {
	t.Helper()
	resp := c.do("GET", seatsPath(eventID), nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	var m seatMapJSON
	decodeJSON(t, resp, &m)
	return m
}

// statuses returns the status of every seat, by label.
func (m seatMapJSON) statuses() map[string]string {
	out := map[string]string{}
	for _, s := range m.Seats {
		out[s.ID] = s.Status
	}
	return out
}

func TestSeatMap_NoEntryToken(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	c, _ := app.newAccount(t, "waiting@example.com", boxoffice.RoleFan)
	for _, r := range []struct{ method, path string }{
		{"GET", seatsPath(e.ID)},
		{"GET", seatsPath(e.ID) + "/status"},
		{"POST", holdsPath(e.ID)},
		{"DELETE", holdsPath(e.ID) + "/A-1-1"},
		{"POST", holdsPath(e.ID) + "/A-1-1/release"},
	} {
		resp := c.do(r.method, r.path, url.Values{"seat": {"A-1-1"}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusForbidden)
		var body map[string]any
		decodeJSON(t, resp, &body)
		if body["error"] != boxoffice.ENOENTRYTOKEN {
			t.Errorf("%s %s: error %v, want no_entry_token", r.method, r.path, body["error"])
		}
	}
	page := c.do("GET", seatsPath(e.ID), nil)
	wantStatus(t, page, http.StatusForbidden)
	if testid(doc(t, page), "back-to-queue") == "" {
		t.Error("the page without an entry token has no way back to the queue")
	}
	fan, _ := app.newFan(t, "admitted@example.com", e.ID)
	if m := getSeatMap(t, fan, e.ID); m.statuses()["A-1-1"] != "free" {
		t.Errorf("a refused hold changed seat A-1-1: %q, want free", m.statuses()["A-1-1"])
	}
}

func TestSeatMap_JSON(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	fan, acct := app.newFan(t, "fan@example.com", e.ID)
	other, _ := app.newFan(t, "other@example.com", e.ID)
	hold(t, other, e.ID, "A-1-1")
	hold(t, fan, e.ID, "A-1-3", "Box B-1-2")
	if err := app.Srv.Holds.MarkSold(context.Background(), e.ID, acct.ID, []string{"A-1-2"}, 1); err != nil {
		t.Fatal(err)
	}

	resp := fan.do("GET", seatsPath(e.ID), nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	var raw struct {
		Seats []map[string]any
		Holds map[string]any
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("seat map JSON: %v\n%.300s", err, body)
	}
	if len(raw.Seats) != seatEventSeats {
		t.Fatalf("%d seats, want %d", len(raw.Seats), seatEventSeats)
	}
	for _, s := range raw.Seats {
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"grade", "id", "number", "price", "row", "section", "status"}; !slices.Equal(keys, want) {
			t.Fatalf("seat %v has members %v, want %v", s["id"], keys, want)
		}
	}
	var m seatMapJSON
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	first := m.Seats[0]
	if first.ID != "A-1-1" || first.Section != "A" || first.Row != "1" || first.Number != "1" || first.Grade != "R" || first.Price != 150000 {
		t.Errorf("first seat = %+v, want A-1-1 in section A, row 1, number 1, grade R, 150000", first)
	}
	want := map[string]string{"A-1-1": "held", "A-1-2": "sold", "A-1-3": "mine", "Box B-1-2": "mine", "A-1-4": "free", "C/D-1-2": "free"}
	got := m.statuses()
	for label, status := range want {
		if got[label] != status {
			t.Errorf("seat %s: status %q, want %q", label, got[label], status)
		}
	}
	for _, s := range m.Seats {
		if s.Section == "Box B" && s.Price != 90000 {
			t.Errorf("seat %s: price %d, want 90000", s.ID, s.Price)
		}
	}
	if !slices.Equal(m.Holds.Seats, []string{"A-1-3", "Box B-1-2"}) {
		t.Errorf("holds.seats = %v, want [A-1-3 Box B-1-2]", m.Holds.Seats)
	}
	if m.Holds.TTLMs <= 290_000 || m.Holds.TTLMs > 300_000 {
		t.Errorf("holds.ttl_ms = %d, want just under 300000", m.Holds.TTLMs)
	}
	if m.Limit != 5 || m.Owned != 1 {
		t.Errorf("limit %d, owned %d; want 5 and 1", m.Limit, m.Owned)
	}

	t.Run("Status", func(t *testing.T) {
		resp := fan.do("GET", seatsPath(e.ID)+"/status", nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		var st struct {
			Statuses     map[string]string
			Left         int
			Limit, Owned int
		}
		var holds struct {
			Holds struct {
				Seats []string
				TTLMs int64 `json:"ttl_ms"`
			}
		}
		body, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(body, &holds)
		wantStatuses := map[string]string{"A-1-1": "held", "A-1-2": "sold", "A-1-3": "mine", "Box B-1-2": "mine"}
		if fmt.Sprint(st.Statuses) != fmt.Sprint(wantStatuses) {
			t.Errorf("statuses = %v, want %v (only the seats that are not free)", st.Statuses, wantStatuses)
		}
		if st.Left != 2 || st.Limit != 5 || st.Owned != 1 {
			t.Errorf("left %d, limit %d, owned %d; want 2, 5, 1", st.Left, st.Limit, st.Owned)
		}
		if !slices.Equal(holds.Holds.Seats, []string{"A-1-3", "Box B-1-2"}) || holds.Holds.TTLMs <= 0 {
			t.Errorf("holds = %+v, want A-1-3 and Box B-1-2 with a TTL", holds.Holds)
		}
	})
}

// TestSeatMap_Page checks the seat map page that every fan shares (the map,
// the legend, the list of sections, a place for the hold panel, and no
// fan's state) and the fan's own parts: the hold panel (htmx) and the list
// of a section's seats.
func TestSeatMap_Page(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	fan, _ := app.newFan(t, "fan@example.com", e.ID)
	other, _ := app.newFan(t, "other@example.com", e.ID)
	hold(t, other, e.ID, "A-2-1")

	resp := fan.do("GET", seatsPath(e.ID), nil)
	wantStatus(t, resp, http.StatusOK)
	d := doc(t, resp)
	if n := d.Find(`svg[data-testid=seatmap] circle[data-id]`).Length(); n != seatEventSeats {
		t.Errorf("the map draws %d seats, want %d", n, seatEventSeats)
	}
	seat := d.Find(`circle[data-id="A-1-2"]`)
	if desc, _ := seat.Parent().Attr("data-desc"); desc != "Section A, row <r>, seat <n>, R seat, ₩150,000" {
		t.Errorf("seat A-1-2's group describes its seats as %q", desc)
	}
	if fill, _ := seat.Parent().Attr("fill"); fill != "#c0392b" || !seat.Parent().HasClass("grade-R") {
		t.Errorf("seat A-1-2 is in a group of fill %q, want grade R's #c0392b", fill)
	}
	if n := d.Find(`#seatmap circle[class], #seatmap circle[aria-disabled]`).Length(); n != 0 {
		t.Errorf("%d seats carry a status in the page every fan shares, want none (seatmap.js marks them)", n)
	}
	if n := d.Find(`circle[tabindex]`).Length(); n != 1 {
		t.Errorf("%d seats are tab stops, want 1 (arrow keys move it)", n)
	}
	if d.Find(`[data-testid=stage]`).Length() != 1 || d.Find(`polygon.section-shape`).Length() != 3 {
		t.Error("the map lacks the stage or the three sections' outlines")
	}
	for code, price := range map[string]string{"R": "₩150,000", "S": "₩90,000"} {
		if got := testid(d, "legend-grade-"+code); !strings.Contains(got, price) {
			t.Errorf("legend of grade %s = %q, want its price %s", code, got, price)
		}
	}
	if d.Find(`#hold-panel`).Length() != 1 || testid(d, "hold-panel") != "" {
		t.Errorf("hold panel = %q, want an empty place for the fan's panel", testid(d, "hold-panel"))
	}
	if d.Find(`[data-testid=nav-account]`).Length() != 0 || d.Find(`[data-testid=logout]`).Length() != 1 {
		t.Error("the shared page's navigation names an account or lacks the log-out button")
	}
	if url, _ := d.Find(`[data-status-url]`).Attr("data-status-url"); url != seatsPath(e.ID)+"/status" {
		t.Errorf("data-status-url = %q", url)
	}

	t.Run("SectionList", func(t *testing.T) {
		if got := testid(d, "section-A"); got != "A" {
			t.Errorf("section link = %q", got)
		}
		link, _ := d.Find(`[data-testid="section-Box B"]`).Attr("href")
		if link != "/events/"+strconv.FormatInt(e.ID, 10)+"/seats?section=Box+B#pick" {
			t.Errorf("link to section Box B = %q", link)
		}
		if got := d.Find(`[data-testid=section-A]`).Parent().Text(); !strings.Contains(got, "18 seats") {
			t.Errorf("section A says %q, want 18 seats", got)
		}
	})

	hold(t, fan, e.ID, "A-1-2", "A-1-3")

	t.Run("Panel", func(t *testing.T) {
		resp := fan.do("GET", seatsPath(e.ID), nil, "HX-Request: true")
		wantStatus(t, resp, http.StatusOK)
		d := doc(t, resp)
		if d.Find("main").Length() != 0 || d.Find("svg#seatmap").Length() != 0 {
			t.Error("the htmx answer is not the hold panel alone")
		}
		if got := testid(d, "seats-left"); !strings.Contains(got, "3 more of your 5") {
			t.Errorf("seats left after holding 2 = %q, want 3 more of your 5", got)
		}
		ttl, ok := d.Find(`[data-testid=hold-countdown]`).Attr("data-ttl-ms")
		ms, err := strconv.ParseInt(ttl, 10, 64)
		if !ok || err != nil || ms <= 290_000 || ms > 300_000 {
			t.Errorf("countdown data-ttl-ms = %q, want just under 300000 (the hold TTL)", ttl)
		}
		if got := testid(d, "hold-countdown"); !strings.Contains(got, "min") {
			t.Errorf("countdown text = %q, want minutes left", got)
		}
		if got := testid(d, "held-seats"); !strings.Contains(got, "Section A, row 1, seat 2") || !strings.Contains(got, "Section A, row 1, seat 3") {
			t.Errorf("held seats = %q, want A-1-2 and A-1-3 described", got)
		}
		if mine, _ := d.Find(`[data-mine]`).Attr("data-mine"); mine != `["A-1-2","A-1-3"]` {
			t.Errorf("data-mine = %q", mine)
		}
		d = doc(t, other.do("GET", seatsPath(e.ID), nil, "HX-Request: true"))
		if got := testid(d, "seats-left"); !strings.Contains(got, "4 more of your 5") {
			t.Errorf("the other fan's seats left = %q, want 4 more of your 5", got)
		}
	})

	t.Run("Section", func(t *testing.T) {
		resp := fan.do("GET", seatsPath(e.ID)+"?section=A", nil)
		wantStatus(t, resp, http.StatusOK)
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" || resp.Header.Get("ETag") != "" {
			t.Errorf("a fan's list: Cache-Control %q, ETag %q; want no-store and none", cc, resp.Header.Get("ETag"))
		}
		d := doc(t, resp)
		if n := d.Find(`[data-testid=list-form] input[type=checkbox][name=seat]`).Length(); n != 18 {
			t.Errorf("section A lists %d seats, want 18", n)
		}
		for label, disabled := range map[string]bool{"A-1-1": false, "A-1-2": true, "A-2-1": true} {
			_, got := d.Find(`[data-testid="list-` + label + `"]`).Attr("disabled")
			if got != disabled {
				t.Errorf("list seat %s disabled = %v, want %v", label, got, disabled)
			}
		}
		if v, _ := d.Find(`[data-testid=list-form] input[name=section]`).Attr("value"); v != "A" {
			t.Errorf("the list form's section = %q, want A", v)
		}
		if got := testid(d, "held-seats"); !strings.Contains(got, "Section A, row 1, seat 2") {
			t.Errorf("the list's hold panel shows %q, want the fan's held seats", got)
		}
		if d.Find(`[data-testid=checkout]`).Length() != 1 || testid(d, "nav-account") != "fan@example.com" {
			t.Errorf("the list lacks the check-out button or the fan's name (%q)", testid(d, "nav-account"))
		}
	})
}

func TestHolds_Hold(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	fan, _ := app.newFan(t, "fan@example.com", e.ID)
	other, _ := app.newFan(t, "other@example.com", e.ID)
	hold(t, other, e.ID, "A-3-1")

	t.Run("OK", func(t *testing.T) {
		before := time.Now()
		resp := fan.do("POST", holdsPath(e.ID), url.Values{"seat": {"A-1-1", "Box B-1-1"}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		var body struct {
			Held      []string
			TTLMs     int64  `json:"ttl_ms"`
			ExpiresAt string `json:"expires_at"`
		}
		decodeJSON(t, resp, &body)
		at, err := time.Parse(time.RFC3339, body.ExpiresAt)
		if !slices.Equal(body.Held, []string{"A-1-1", "Box B-1-1"}) || body.TTLMs <= 290_000 || body.TTLMs > 300_000 || err != nil ||
			at.Before(before.Add(290*time.Second)) || at.After(time.Now().Add(301*time.Second)) {
			t.Errorf("hold = %+v (%v), want both seats, ttl_ms just under 300000, expires_at in 5 minutes", body, err)
		}
		if got := getSeatMap(t, fan, e.ID).statuses(); got["A-1-1"] != "mine" || got["Box B-1-1"] != "mine" {
			t.Errorf("after holding: A-1-1 %q, Box B-1-1 %q; want mine", got["A-1-1"], got["Box B-1-1"])
		}
	})

	refusals := []struct {
		name, code string
		status     int
		seats      []string
		details    map[string]any
	}{
		{"SeatTaken", "seat_taken", http.StatusConflict, []string{"A-1-5", "A-3-1"}, map[string]any{"seats": []any{"A-3-1"}}},
		{"LimitExceeded", "limit_exceeded", http.StatusUnprocessableEntity, []string{"A-1-4", "A-1-5", "A-1-6", "A-2-2"}, map[string]any{"limit": 5.0, "owned": 0.0, "held": 2.0}},
		{"UnknownSeat", "bad_seat", http.StatusBadRequest, []string{"A-1-5", "Z-9-9"}, map[string]any{"seats": []any{"Z-9-9"}}},
		{"MalformedSeat", "bad_seat", http.StatusBadRequest, []string{"A-1-5", "nope"}, map[string]any{"seats": []any{"nope"}}},
		{"NoSeats", "bad_seat", http.StatusBadRequest, nil, nil},
		{"TooMany", "bad_seat", http.StatusBadRequest, []string{"A-1-5", "A-1-6", "A-2-2", "A-2-3", "A-2-4", "A-2-5"}, nil},
		{"Duplicate", "bad_seat", http.StatusBadRequest, []string{"A-1-5", "A-1-5"}, map[string]any{"seats": []any{"A-1-5"}}},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			before := getSeatMap(t, fan, e.ID)
			resp := fan.do("POST", holdsPath(e.ID), url.Values{"seat": r.seats}, "Accept: application/json")
			wantStatus(t, resp, r.status)
			var body map[string]any
			decodeJSON(t, resp, &body)
			if body["error"] != r.code || body["message"] == "" {
				t.Errorf("body = %v, want error %s with a message", body, r.code)
			}
			for k, v := range r.details {
				if fmt.Sprint(body[k]) != fmt.Sprint(v) {
					t.Errorf("%s = %v, want %v", k, body[k], v)
				}
			}
			after := getSeatMap(t, fan, e.ID)
			if fmt.Sprint(after.statuses()) != fmt.Sprint(before.statuses()) || !slices.Equal(after.Holds.Seats, before.Holds.Seats) {
				t.Errorf("a refused hold changed the seats: %v, then %v", before.Holds.Seats, after.Holds.Seats)
			}
		})
	}

	t.Run("SeatOfAnotherEvent", func(t *testing.T) {
		second := app.newSeatEvent(t)
		fan2, _ := app.newFan(t, "fan2@example.com", second.ID)
		// the labels are the same, but a seat of the first event is not the second's:
		// a seat this event lacks is unknown
		resp := fan2.do("POST", holdsPath(second.ID), url.Values{"seat": {"A-4-1"}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusBadRequest)
		hold(t, fan2, second.ID, "A-3-1") // held in the first event by another fan
		if got := getSeatMap(t, fan, e.ID).statuses()["A-3-1"]; got != "held" {
			t.Errorf("seat A-3-1 of the first event is %q, want held by the other fan still", got)
		}
	})

	t.Run("Form", func(t *testing.T) {
		c, _ := app.newFan(t, "form@example.com", e.ID)
		resp := c.do("POST", holdsPath(e.ID), url.Values{"seat": {"A-2-5", "A-2-6"}, "section": {"A"}})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != seatsPath(e.ID)+"?section=A#pick" {
			t.Errorf("Location = %q, want back to the list of section A", loc)
		}
		d := doc(t, c.do("GET", seatsPath(e.ID)+"?section=A", nil))
		if got := testid(d, "hold-notice"); !strings.Contains(got, "You hold 2 seats for") {
			t.Errorf("notice = %q, want that 2 seats are held", got)
		}
		if testid(doc(t, c.do("GET", seatsPath(e.ID), nil, "HX-Request: true")), "hold-notice") != "" {
			t.Error("the notice shows twice")
		}

		resp = c.do("POST", holdsPath(e.ID), url.Values{"seat": {"A-3-1"}})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != seatsPath(e.ID)+"?section=A#pick" {
			t.Errorf("Location = %q, want the list of the seat's section, A", loc)
		}
		d = doc(t, c.do("GET", seatsPath(e.ID)+"?section=A", nil))
		notice := d.Find(`[data-testid=hold-notice]`)
		if !notice.HasClass("error") || !strings.Contains(notice.Text(), "already sold or were just chosen by someone else") || !strings.Contains(notice.Text(), "Section A, row 3, seat 1") {
			t.Errorf("notice = %q, want the refusal naming section A, row 3, seat 1", notice.Text())
		}
	})

	t.Run("HTMX", func(t *testing.T) {
		c, _ := app.newFan(t, "htmx@example.com", e.ID)
		resp := c.do("POST", holdsPath(e.ID), url.Values{"seat": {"A-3-5"}}, "HX-Request: true")
		wantStatus(t, resp, http.StatusOK)
		d := doc(t, resp)
		if d.Find("main").Length() != 0 || !strings.Contains(testid(d, "held-seats"), "Section A, row 3, seat 5") {
			t.Error("the htmx answer is not the hold panel with the new hold")
		}
		if got := testid(d, "hold-notice"); !strings.Contains(got, "You hold 1 seat for") {
			t.Errorf("notice = %q", got)
		}
		resp = c.do("POST", holdsPath(e.ID), url.Values{"seat": {"A-3-1"}}, "HX-Request: true")
		wantStatus(t, resp, http.StatusConflict)
		d = doc(t, resp)
		if !strings.Contains(testid(d, "hold-notice"), "already sold or were just chosen by someone else") || !strings.Contains(testid(d, "held-seats"), "Section A, row 3, seat 5") {
			t.Error("a refused htmx hold does not answer the panel with the refusal")
		}
	})
}

func TestHolds_Release(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	fan, _ := app.newFan(t, "fan@example.com", e.ID)
	other, _ := app.newFan(t, "other@example.com", e.ID)
	hold(t, fan, e.ID, "A-1-1", "Box B-1-1", "C/D-1-1")
	hold(t, other, e.ID, "A-1-2")

	t.Run("OK", func(t *testing.T) {
		for _, label := range []string{"A-1-1", "Box B-1-1", "C/D-1-1"} {
			resp := fan.do("DELETE", holdsPath(e.ID)+"/"+url.PathEscape(label), nil, "Accept: application/json")
			wantStatus(t, resp, http.StatusOK)
			var body map[string]string
			decodeJSON(t, resp, &body)
			if body["released"] != label {
				t.Errorf("released = %q, want %q", body["released"], label)
			}
			if got := getSeatMap(t, fan, e.ID).statuses()[label]; got != "free" {
				t.Errorf("after release, seat %s is %q, want free", label, got)
			}
		}
		// another fan's view of the seats may be a moment old (Holds.MapMaxAge),
		// but holding is decided in Redis at once
		hold(t, other, e.ID, "A-1-1", "Box B-1-1", "C/D-1-1")
	})

	t.Run("AnotherFansSeat", func(t *testing.T) {
		resp := fan.do("DELETE", holdsPath(e.ID)+"/A-1-2", nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusNotFound)
		resp = fan.do("POST", holdsPath(e.ID)+"/A-1-2/release", nil)
		wantStatus(t, resp, http.StatusSeeOther)
		m := getSeatMap(t, other, e.ID)
		if !slices.Contains(m.Holds.Seats, "A-1-2") || m.statuses()["A-1-2"] != "mine" {
			t.Errorf("the other fan's holds = %v, want A-1-2 untouched", m.Holds.Seats)
		}
		d := doc(t, fan.do("GET", resp.Header.Get("Location"), nil))
		if n := d.Find(`[data-testid=hold-notice].error`).Length(); n != 1 {
			t.Error("the refused release is not explained")
		}
	})

	t.Run("BadSeat", func(t *testing.T) {
		resp := fan.do("DELETE", holdsPath(e.ID)+"/Z-9-9", nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusBadRequest)
	})

	t.Run("Form", func(t *testing.T) {
		hold(t, fan, e.ID, "A-2-2")
		resp := fan.do("POST", holdsPath(e.ID)+"/A-2-2/release", nil)
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != seatsPath(e.ID)+"?section=A#pick" {
			t.Errorf("Location = %q, want the list of the released seat's section, A", loc)
		}
		d := doc(t, fan.do("GET", resp.Header.Get("Location"), nil))
		if got := testid(d, "hold-notice"); !strings.Contains(got, "Section A, row 2, seat 2") {
			t.Errorf("notice = %q, want the released seat named", got)
		}
		if !strings.Contains(testid(d, "seats-left"), "5 more of your 5") {
			t.Errorf("seats left = %q, want 5 more of your 5", testid(d, "seats-left"))
		}
	})

	t.Run("HTMX", func(t *testing.T) {
		hold(t, fan, e.ID, "A-2-3", "A-2-4")
		resp := fan.do("DELETE", holdsPath(e.ID)+"/A-2-3", nil, "HX-Request: true")
		wantStatus(t, resp, http.StatusOK)
		d := doc(t, resp)
		if got := testid(d, "held-seats"); strings.Contains(got, "seat 3,") || !strings.Contains(got, "Section A, row 2, seat 4") {
			t.Errorf("held seats after the release = %q, want A-2-4 alone", got)
		}
	})
}

// Once the sale is closed, a fan whose entry token is still live can no
// longer hold seats, and nothing is held.
func TestHolds_Hold_SaleClosed(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	c, _ := app.newFan(t, "late@example.com", e.ID)
	if _, err := app.Srv.Events.CloseEvent(context.Background(), e.ID); err != nil {
		t.Fatal(err)
	}
	app.Srv.LiveEvents.Forget(e.ID)
	resp := c.do("POST", holdsPath(e.ID), url.Values{"seat": {"A-1-1"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusConflict)
	if m := getSeatMap(t, c, e.ID); len(m.Holds.Seats) != 0 {
		t.Errorf("holds after a refused hold: %v, want none", m.Holds.Seats)
	}
}

// A hold that adds seats to the fan's earlier holds says so beside the
// heading that counts them all: how many it added, how many the fan now
// holds, and the same time left as the countdown below it (the first hold's
// end, which comes before the new seats'), in the language of the page that
// shows it, by a form (the flash on the list of the section) and by htmx.
func TestHolds_HoldMore(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	for _, tt := range []struct {
		name, lang, email string
		earlier, more     []string
		heading, added    string
	}{
		{"Form", "en", "form@example.com", []string{"A-1-1", "A-1-2"}, []string{"A-2-1", "A-2-2", "A-2-3"}, "Your held seats (5)", "3 seats added: you now hold 5. Pay within "},
		{"HTMX", "ko", "htmx@example.com", []string{"A-1-4", "A-1-5"}, []string{"A-3-4"}, "선점한 좌석 3석", "좌석 1석을 추가로 선점해 모두 3석을 선점하고 있습니다. 가장 먼저 선점한 좌석이 "},
		// A form sent again asks for seats held already: only the new
		// one counts as added, and none added says what the fan holds.
		{"Mixed", "en", "mixed@example.com", []string{"A-3-1", "A-3-2"}, []string{"A-3-1", "A-3-3"}, "Your held seats (3)", "1 seat added: you now hold 3. Pay within "},
		{"Again", "en", "again@example.com", []string{"A-2-4", "A-2-5", "A-2-6"}, []string{"A-2-4", "A-2-5"}, "Your held seats (3)", "You hold 3 seats for "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := app.newFan(t, tt.email, e.ID)
			hold(t, c, e.ID, tt.earlier...)
			var resp *http.Response
			if tt.name == "HTMX" {
				resp = c.do("POST", holdsPath(e.ID), url.Values{"seat": tt.more}, "HX-Request: true", "Accept-Language: "+tt.lang)
				wantStatus(t, resp, http.StatusOK)
			} else {
				wantStatus(t, c.do("POST", holdsPath(e.ID), url.Values{"seat": tt.more, "section": {"A"}}), http.StatusSeeOther)
				resp = c.do("GET", seatsPath(e.ID)+"?section=A", nil, "Accept-Language: "+tt.lang)
			}
			d := doc(t, resp)
			notice, countdown := testid(d, "hold-notice"), d.Find(`[data-countdown]`).Text()
			if got := testid(d, "hold-count"); got != tt.heading {
				t.Errorf("heading = %q, want %q", got, tt.heading)
			}
			if !strings.HasPrefix(notice, tt.added) || countdown == "" || !strings.Contains(notice, countdown) {
				t.Errorf("notice = %q, want it to start %q and give the countdown's %q", notice, tt.added, countdown)
			}
		})
	}
}
