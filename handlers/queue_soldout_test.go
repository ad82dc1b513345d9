package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// tick runs one admission tick of the event with the settings the admitter
// reads from PostgreSQL (store.Events.OpenQueues), sold-out mark included.
func (a *testApp) tick(t *testing.T, eventID int64) {
	t.Helper()
	open, err := a.Srv.Events.(boxoffice.AdmissionSource).OpenQueues(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range open {
		if s.EventID == eventID {
			a.admit(t, s)
			return
		}
	}
	t.Fatalf("event %d's queue is not open", eventID)
}

// decodeBytes reads a JSON object.
func decodeBytes(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// wantSoldOutStatus checks that c, of a sold-out event, is told so by the
// queue's status as its join told it: JSON 200 with the join's very body,
// the htmx fragment, the page and the stream in the sold-out state.
func wantSoldOutStatus(t *testing.T, c *client, eventID int64, joined string) {
	t.Helper()
	path := fmt.Sprintf("/events/%d/queue", eventID)
	resp := c.do("GET", path+"/status", nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if b, _ := io.ReadAll(resp.Body); string(b) != joined {
		t.Errorf("status answers %s, want the join's answer %s", b, joined)
	}
	for _, h := range [][]string{{"HX-Request: true"}, nil} {
		for _, p := range []string{path + "/status", path} {
			resp := c.do("GET", p, nil, h...)
			wantStatus(t, resp, http.StatusOK)
			d := doc(t, resp)
			if got := d.Find(`[data-testid="queue-state"]`).AttrOr("data-queue-status", ""); got != boxoffice.QueueSoldOut || testid(d, "queue-sold-out") == "" {
				t.Errorf("GET %s %v shows state %q, want the sold-out state", p, h, got)
			}
		}
	}
	_, ch := stream(t, c, eventID)
	if e := next(t, ch); e.name != "position" || fragment(t, e).Find(`[data-testid="queue-sold-out"]`).Length() != 1 {
		t.Errorf("stream: %q: %s; want the sold-out state", e.name, e.data)
	}
}

// A fan who joins an event with nothing left to sell, every seat blocked by
// an admin or sold, is told sold_out by the join, and then by the status in
// JSON, htmx, HTML and the stream alike; the join placed nobody, so it sets
// no place cookie. A fan who had a place before the sell-out keeps it and
// is told sold_out from the tick's figures.
func TestQueue_SoldOutStatus(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	for _, how := range []string{"blocked", "sold"} {
		t.Run(how, func(t *testing.T) {
			ev := app.saleEvent(t) // A-1-1 to A-1-10
			path := fmt.Sprintf("/events/%d/queue", ev.ID)
			blocks, seats := fmt.Sprintf("/admin/events/%d/blocks", ev.ID), "A-1-1, A-1-2, A-1-3, A-1-4, A-1-5, A-1-6, A-1-7, A-1-8, A-1-9, A-1-10"
			if how == "sold" {
				seats = strings.TrimSuffix(seats, ", A-1-10")
			}
			wantStatus(t, admin.do("POST", blocks, url.Values{"action": {"block"}, "seat": {seats}}), http.StatusSeeOther)
			if how == "sold" {
				buyer, acct := app.newAccount(t, how+"-buyer@example.com", boxoffice.RoleFan)
				app.enter(t, buyer, ev.ID)
				app.hold(t, acct, ev.ID, "A-1-10")
				if err := app.buy(buyer, ev.ID); err != nil {
					t.Fatal(err)
				}
			}
			// Until the admitter's next tick marks the queue sold out, a
			// join still takes a place.
			early, _ := app.newAccount(t, how+"-early@example.com", boxoffice.RoleFan)
			wantStatus(t, early.do("POST", path, url.Values{}, "Accept: application/json"), http.StatusOK)
			app.tick(t, ev.ID)

			fan, _ := app.newAccount(t, how+"-fan@example.com", boxoffice.RoleFan)
			resp := fan.do("POST", path, url.Values{}, "Accept: application/json")
			wantStatus(t, resp, http.StatusOK)
			joined, _ := io.ReadAll(resp.Body)
			if m := decodeBytes(t, joined); m["status"] != boxoffice.QueueSoldOut || m["position"] != 0.0 {
				t.Fatalf("join answers %s, want sold_out and no position", joined)
			}
			if c := resp.Header.Values("Set-Cookie"); len(c) != 0 {
				t.Errorf("a sold-out join placed nobody but set %v", c)
			}
			wantSoldOutStatus(t, fan, ev.ID, string(joined))

			// The same through the form, as a browser without JavaScript.
			form, _ := app.newAccount(t, how+"-form@example.com", boxoffice.RoleFan)
			resp = form.do("POST", path, url.Values{})
			wantStatus(t, resp, http.StatusSeeOther)
			if c := resp.Header.Values("Set-Cookie"); len(c) != 0 {
				t.Errorf("a sold-out join (form) placed nobody but set %v", c)
			}
			wantSoldOutStatus(t, form, ev.ID, string(joined))

			// The fan in line since before keeps the place, now sold out.
			resp = early.do("GET", path+"/status", nil, "Accept: application/json")
			wantStatus(t, resp, http.StatusOK)
			if m := decode(t, resp); m["status"] != boxoffice.QueueSoldOut || m["position"] != 1.0 {
				t.Errorf("the early fan's status: %v, want sold_out at position 1", m)
			}
		})
	}
}

// A paused event answers a join and the status alike: the new fan gets a
// place, and both say waiting and paused.
func TestQueue_PausedStatus(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	ev := app.saleEvent(t)
	path := fmt.Sprintf("/events/%d/queue", ev.ID)
	wantStatus(t, admin.do("POST", fmt.Sprintf("/admin/events/%d/admission", ev.ID), url.Values{"paused": {"true"}}), http.StatusSeeOther)
	app.tick(t, ev.ID)
	fan, _ := app.newAccount(t, "paused@example.com", boxoffice.RoleFan)
	resp := fan.do("POST", path, url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	joined, _ := io.ReadAll(resp.Body)
	if m := decodeBytes(t, joined); m["status"] != boxoffice.QueueWaiting || m["paused"] != true || m["position"] != 1.0 {
		t.Fatalf("join answers %s, want waiting, paused, at 1", joined)
	}
	resp = fan.do("GET", path+"/status", nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if b, _ := io.ReadAll(resp.Body); string(b) != string(joined) {
		t.Errorf("status answers %s, want the join's answer %s", b, joined)
	}
	for _, p := range []string{path + "/status", path} {
		d := doc(t, fan.do("GET", p, nil))
		if got := d.Find(`[data-testid="queue-state"]`).AttrOr("data-queue-status", ""); got != boxoffice.QueueWaiting || testid(d, "queue-paused") == "" {
			t.Errorf("GET %s shows state %q, paused %q; want waiting and paused", p, got, testid(d, "queue-paused"))
		}
	}
}
