package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

	wantStatus(t, admin.do("POST", blocks, url.Values{"action": {"block"}, "seat": {"A-1-1, A-1-2, A-1-3, A-1-4, A-1-5, A-1-6, A-1-7"}}), http.StatusSeeOther)
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

// What fans see follows the seats under a rush: in each round hundreds of
// fans hold and buy an event's last seats (some blocked) while readers poll
// its JSON. No answer says sold_out while a seat is not sold (sold seats
// only grow here, so PostgreSQL, read right after the answer, still shows
// the seat unsold), on_sale comes with seats left and all_taken with none
// left but some held; once the rush is over the event is sold_out exactly
// when every seat is sold or blocked.
func TestEventSeatStatus_Rush(t *testing.T) {
	t.Parallel()
	const fans, readers, rounds, blocked = 200, 8, 2, 3
	app := newTestApp(t)
	admin := app.newAdmin(t)
	clients := make([]*client, fans)
	for i := range clients {
		clients[i], _ = app.newAccount(t, fmt.Sprintf("rush%d@example.com", i), boxoffice.RoleFan)
	}
	ctx := context.Background()
	for round := range rounds {
		ev := app.saleEvent(t) // A-1-1 to A-1-10
		wantStatus(t, admin.do("POST", fmt.Sprintf("/admin/events/%d/blocks", ev.ID), url.Values{"action": {"block"}, "seat": {"A-1-1, A-1-2, A-1-3"}}), http.StatusSeeOther)
		for _, c := range clients {
			wantStatus(t, c.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}, "Accept: application/json"), http.StatusOK)
		}
		app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1000, TokenTTL: 10 * time.Minute})
		unsold := func() (int, error) {
			var n int
			err := app.DB.Pool.QueryRow(ctx, `
				SELECT count(*) FROM event_seat s WHERE s.event_id = $1
				AND NOT EXISTS (SELECT 1 FROM sold_seat ss WHERE ss.event_id = s.event_id AND ss.seat_label = s.label)
				AND NOT EXISTS (SELECT 1 FROM blocked_seat b WHERE b.event_id = s.event_id AND b.seat_label = s.label)`, ev.ID).Scan(&n)
			return n, err
		}
		read := func(c *client) (eventJSON, error) {
			var e eventJSON
			resp, err := c.try("GET", fmt.Sprintf("/events/%d", ev.ID), nil, "Accept: application/json")
			if err != nil {
				return e, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return e, fmt.Errorf("GET event: %d", resp.StatusCode)
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				return e, err
			}
			if len(e.Grades) != 1 {
				return e, fmt.Errorf("GET event: grades %+v, want R alone", e.Grades)
			}
			return e, nil
		}

		done := make(chan struct{})
		var polls atomic.Int64
		var watch sync.WaitGroup
		for range readers {
			c := app.newClient(t)
			watch.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					e, err := read(c)
					if err != nil {
						t.Error(err)
						return
					}
					polls.Add(1)
					left, held := e.Grades[0].SeatsLeft, e.Grades[0].SeatsHeld
					switch {
					case e.Status == boxoffice.EventSoldOut:
						if n, err := unsold(); err != nil || n != 0 || left != 0 || held != 0 {
							t.Errorf("round %d: sold_out (left %d, held %d) while %d seats are not sold (%v)", round, left, held, n, err)
							return
						}
					case e.Status == boxoffice.EventAllTaken && (left != 0 || held == 0),
						e.Status == boxoffice.EventOnSale && left == 0:
						t.Errorf("round %d: %s with %d seats left and %d held", round, e.Status, left, held)
						return
					}
				}
			})
		}
		var rush sync.WaitGroup
		var bought atomic.Int64
		for i, c := range clients {
			rush.Go(func() {
				for j := range 10 - blocked {
					seat := fmt.Sprintf("A-1-%d", blocked+1+(i+j)%(10-blocked))
					resp, err := c.try("POST", holdsPath(ev.ID), url.Values{"seat": {seat}}, "Accept: application/json")
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode == http.StatusConflict {
						continue
					}
					if resp.StatusCode != http.StatusOK {
						t.Errorf("hold %s: %d", seat, resp.StatusCode)
						return
					}
					if err := app.buy(c, ev.ID); err != nil {
						t.Errorf("fan %d buying %s: %v", i, seat, err)
						return
					}
					bought.Add(1)
					return
				}
			})
		}
		rush.Wait()
		close(done)
		watch.Wait()
		if t.Failed() {
			return
		}
		n, err := unsold()
		if err != nil {
			t.Fatal(err)
		}
		app.Srv.EventPages.Forget(ev.ID)
		e, err := read(admin)
		if err != nil {
			t.Fatal(err)
		}
		if (e.Status == boxoffice.EventSoldOut) != (n == 0) || bought.Load() != int64(10-blocked) {
			t.Errorf("round %d: after the rush %s with %d seats neither sold nor blocked and %d bought, want sold_out exactly when none is left (%d polls)",
				round, e.Status, n, bought.Load(), polls.Load())
		}
	}
}

// buy checks out the client's holds for the event and pays at the sandbox
// PG, for goroutines other than the test's.
func (a *testApp) buy(c *client, eventID int64) error {
	resp, err := c.try("POST", fmt.Sprintf("/events/%d/orders", eventID), url.Values{}, "Accept: application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var o orderAnswer
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("checkout: %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		return err
	}
	success, err := a.trySandboxPay(c, o, "pay", sandbox.ScenarioDefault)
	if err != nil {
		return err
	}
	if resp, err = c.try("GET", success, nil); err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return fmt.Errorf("payment success: %d", resp.StatusCode)
	}
	return nil
}
