package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
)

// eventJSON is GET /events/{id} as JSON, as far as the seats go.
type eventJSON struct {
	Status string
	Grades []struct {
		Code      string
		SeatsLeft int `json:"seats_left"`
		SeatsHeld int `json:"seats_held"`
	}
}

// seatsOf reads the event's JSON afresh (its short-lived copy dropped first)
// and returns its status and grade R's seats left and held.
func (a *testApp) seatsOf(t *testing.T, c *client, eventID int64) (string, int, int) {
	t.Helper()
	a.Srv.EventPages.Forget(eventID)
	var e eventJSON
	decodeJSON(t, c.do("GET", fmt.Sprintf("/events/%d", eventID), nil, "Accept: application/json"), &e)
	if len(e.Grades) != 1 || e.Grades[0].Code != "R" {
		t.Fatalf("grades %+v, want R alone", e.Grades)
	}
	return e.Status, e.Grades[0].SeatsLeft, e.Grades[0].SeatsHeld
}

// What fans see follows the seats: the event's JSON, its page and the home
// page, with blocked seats, a live hold in Redis, an unpaid order and sold
// seats, through on_sale, all_taken and sold_out and back.
func TestEventSeatStatus(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t) // A-1-1 to A-1-10, grade R
	admin := app.newAdmin(t)
	reader := app.newClient(t)
	blocks := fmt.Sprintf("/admin/events/%d/blocks", ev.ID)
	want := func(status string, left, held int) {
		t.Helper()
		if st, l, h := app.seatsOf(t, reader, ev.ID); st != status || l != left || h != held {
			t.Fatalf("event JSON: status %q, seats_left %d, seats_held %d; want %q, %d, %d", st, l, h, status, left, held)
		}
		page := doc(t, reader.do("GET", fmt.Sprintf("/events/%d", ev.ID), nil))
		join := page.Find(fmt.Sprintf(`form[action="/events/%d/queue"]`, ev.ID)).Length()
		soldOut, allTaken := testid(page, "sold-out"), testid(page, "all-taken")
		switch status {
		case boxoffice.EventSoldOut:
			if join != 0 || !strings.Contains(soldOut, "Sold out") || allTaken != "" {
				t.Fatalf("sold-out page: %d join forms, sold-out %q, all-taken %q; want no join and the sold-out sentence", join, soldOut, allTaken)
			}
		case boxoffice.EventAllTaken:
			if join != 1 || !strings.Contains(allTaken, "some may come back") || soldOut != "" {
				t.Fatalf("all-taken page: %d join forms, sold-out %q, all-taken %q; want the join and the all-taken sentence", join, soldOut, allTaken)
			}
		default:
			if join != 1 || soldOut != "" || allTaken != "" {
				t.Fatalf("on-sale page: %d join forms, sold-out %q, all-taken %q; want the join alone", join, soldOut, allTaken)
			}
		}
		var home struct {
			Events []struct {
				ID     int64
				Status string
			}
		}
		decodeJSON(t, reader.do("GET", "/", nil, "Accept: application/json"), &home)
		for _, e := range home.Events {
			if e.ID == ev.ID && e.Status != status {
				t.Fatalf("home JSON: status %q, want %q", e.Status, status)
			}
		}
	}

	wantStatus(t, admin.do("POST", blocks, url.Values{"action": {"block"}, "seat": {"A-1-1 A-1-2 A-1-3 A-1-4 A-1-5 A-1-6 A-1-7"}}), http.StatusSeeOther)
	want(boxoffice.EventOnSale, 3, 0)

	first, firstAcct := app.newAccount(t, "first@example.com", boxoffice.RoleFan)
	app.enter(t, first, ev.ID)
	app.hold(t, firstAcct, ev.ID, "A-1-8")
	want(boxoffice.EventOnSale, 2, 1) // a live hold without an order is held

	resp := first.do("POST", fmt.Sprintf("/events/%d/orders", ev.ID), url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusCreated)
	var firstOrder orderAnswer
	decodeJSON(t, resp, &firstOrder)
	second, secondAcct := app.newAccount(t, "second@example.com", boxoffice.RoleFan)
	app.enter(t, second, ev.ID)
	app.hold(t, secondAcct, ev.ID, "A-1-9", "A-1-10")
	want(boxoffice.EventAllTaken, 0, 3) // one seat awaiting payment, two held
	if got := testid(doc(t, reader.do("GET", "/", nil)), "event-sale"); !strings.Contains(got, "some may come back") {
		t.Errorf("home page says %q, want all seats taken", got)
	}

	wantStatus(t, first.do("GET", app.payAtSandbox(t, first, firstOrder, "pay", sandbox.ScenarioDefault), nil), http.StatusSeeOther)
	want(boxoffice.EventAllTaken, 0, 2)

	resp = second.do("POST", fmt.Sprintf("/events/%d/orders", ev.ID), url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusCreated)
	var secondOrder orderAnswer
	decodeJSON(t, resp, &secondOrder)
	wantStatus(t, second.do("GET", app.payAtSandbox(t, second, secondOrder, "pay", sandbox.ScenarioDefault), nil), http.StatusSeeOther)
	want(boxoffice.EventSoldOut, 0, 0) // three sold, seven blocked
	if got := testid(doc(t, reader.do("GET", "/", nil)), "event-sale"); got != "Sold out" {
		t.Errorf("home page says %q, want Sold out", got)
	}

	wantStatus(t, admin.do("POST", blocks, url.Values{"action": {"unblock"}, "seat": {"A-1-1"}}), http.StatusSeeOther)
	want(boxoffice.EventOnSale, 1, 0)
}
