package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
)

// session returns the scs token of the client's session cookie.
func (a *testApp) session(t *testing.T, c *client) string {
	t.Helper()
	u, _ := url.Parse(a.URL)
	for _, k := range c.Jar.Cookies(u) {
		if k.Name == "boxoffice_session" {
			return k.Value
		}
	}
	t.Fatal("the client has no session cookie")
	return ""
}

// sessionKey returns the session key ("sid") of the client's session.
func (a *testApp) sessionKey(t *testing.T, c *client) string {
	t.Helper()
	ctx, err := a.Srv.Sessions.Load(context.Background(), a.session(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return a.Srv.Sessions.GetString(ctx, "sid")
}

// wantNoEntry checks a JSON refusal for want reason.
func wantNoEntry(t *testing.T, resp *http.Response, reason string) {
	t.Helper()
	wantStatus(t, resp, http.StatusForbidden)
	if m := decode(t, resp); m["error"] != "no_entry_token" || m["reason"] != reason {
		t.Errorf("refusal = %v, want no_entry_token for reason %s", m, reason)
	}
}

// The entry token works only in the session it was issued to (DESIGN rule
// 5), tested through GET /events/{id}/entry, which requireEntry guards as
// it guards the seat map, holds and checkout.
func TestEntry_Binding(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	join, entry := fmt.Sprintf("/events/%d/queue", ev.ID), fmt.Sprintf("/events/%d/entry", ev.ID)
	fan, _ := app.newAccount(t, "fan@example.com", boxoffice.RoleFan)
	other, _ := app.newAccount(t, "other@example.com", boxoffice.RoleFan)

	wantNoEntry(t, fan.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonNone)
	wantStatus(t, fan.do("POST", join, url.Values{}), http.StatusSeeOther)
	wantNoEntry(t, fan.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonNone)
	page := fan.do("GET", entry, nil)
	wantStatus(t, page, http.StatusForbidden)
	if d := doc(t, page); testid(d, "no-entry") == "" || d.Find(`[data-testid="back-to-queue"]`).Length() != 1 {
		t.Error("a page request without a token does not explain and link back to the queue")
	}

	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 10, TokenTTL: time.Minute})
	resp := fan.do("GET", entry, nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if ttl, _ := decode(t, resp)["ttl_ms"].(float64); ttl <= 0 || ttl > 60000 {
		t.Errorf("ttl_ms = %v, want up to the token's 60000 ms", ttl)
	}
	resp = fan.do("GET", entry, nil, "HX-Request: true")
	wantStatus(t, resp, http.StatusOK)
	if d := doc(t, resp); testid(d, "entry-ttl") == "" || d.Find("nav").Length() != 0 {
		t.Error("the htmx entry fragment does not say how long is left, or is a whole page")
	}
	resp = fan.do("GET", entry, nil)
	wantStatus(t, resp, http.StatusOK)
	if d := doc(t, resp); testid(d, "entry-ttl") == "" || d.Find(`[data-testid="to-seats"]`).AttrOr("href", "") != fmt.Sprintf("/events/%d/seats", ev.ID) {
		t.Error("the entry page does not say how long is left and lead to the seat map")
	}

	t.Run("OtherSessionOfTheAccount", func(t *testing.T) {
		again := app.newClient(t)
		wantStatus(t, again.do("POST", "/login", url.Values{"email": {"fan@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)
		wantNoEntry(t, again.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonOtherSession)
	})

	t.Run("OtherAccount", func(t *testing.T) {
		wantNoEntry(t, other.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonNone)
	})

	t.Run("LogInAgainInTheSameBrowser", func(t *testing.T) {
		// Logging in again keeps the turn: the session id changes, its
		// session key (which the token is bound to) does not.
		wantStatus(t, fan.do("POST", "/login", url.Values{"email": {"fan@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)
		wantStatus(t, fan.do("GET", entry, nil, "Accept: application/json"), http.StatusOK)
		// Another account logging in in this browser does not inherit it.
		shared := app.newClient(t)
		wantStatus(t, shared.do("POST", "/login", url.Values{"email": {"fan@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)
		before := app.sessionKey(t, shared)
		wantStatus(t, shared.do("POST", "/login", url.Values{"email": {"other@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)
		if after := app.sessionKey(t, shared); after == "" || after == before {
			t.Error("another account logging in kept the first account's session key")
		}
	})
}

// An expired token sends the fan back to the queue page, which says why and
// offers a new turn.
func TestEntry_Expired(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	join, entry := fmt.Sprintf("/events/%d/queue", ev.ID), fmt.Sprintf("/events/%d/entry", ev.ID)
	fan, _ := app.newAccount(t, "late@example.com", boxoffice.RoleFan)
	wantStatus(t, fan.do("POST", join, url.Values{}), http.StatusSeeOther)
	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 10, TokenTTL: 300 * time.Millisecond})
	wantStatus(t, fan.do("GET", entry, nil, "Accept: application/json"), http.StatusOK)

	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp := fan.do("GET", entry, nil)
		if resp.StatusCode == http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatal("the 300 ms entry token still works after 10 s")
			}
			continue
		}
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != join+"?entry=expired" {
			t.Fatalf("an expired token redirects to %q, want %s?entry=expired", loc, join)
		}
		break
	}
	wantNoEntry(t, fan.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonExpired)
	resp := fan.do("GET", join+"/status", nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusNotFound)
	if m := decode(t, resp); m["error"] != "not_in_queue" || m["reason"] != boxoffice.ReasonExpired {
		t.Errorf("status after expiry = %v, want not_in_queue, expired", m)
	}
	for _, query := range []string{"?entry=expired", ""} {
		resp = fan.do("GET", join+query, nil)
		wantStatus(t, resp, http.StatusOK)
		d := doc(t, resp)
		if msg := testid(d, "queue-expired"); msg == "" || d.Find(`form[action="`+join+`"] [data-testid="rejoin"]`).Length() != 1 {
			t.Errorf("waiting room%s after expiry: message %q, want the time-ran-out message and a join button", query, msg)
		}
	}

	// Joining again gives a new turn, and its token reaches this session.
	wantStatus(t, fan.do("POST", join, url.Values{}), http.StatusSeeOther)
	position(t, fan, join+"/status", "waiting", 1)
	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 10, TokenTTL: time.Minute})
	wantStatus(t, fan.do("GET", entry, nil, "Accept: application/json"), http.StatusOK)
}

// A fan who moves to a second device during their turn gets it there by
// joining the queue again: the rejoin moves the turn to that session, with
// its holds and without extending it, and the session that had it is
// refused with a sentence saying how to get it back. Logging out instead
// ends the turn and its holds (issue 17), and says so after logging in.
func TestEntry_RejoinMovesTurn(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	join, entry := fmt.Sprintf("/events/%d/queue", e.ID), fmt.Sprintf("/events/%d/entry", e.ID)
	fan, acct := app.newFan(t, "fan2@example.com", e.ID)
	hold(t, fan, e.ID, "A-1-1")
	ttl := func(c *client) float64 {
		t.Helper()
		resp := c.do("GET", entry, nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		ms, _ := decode(t, resp)["ttl_ms"].(float64)
		return ms
	}
	rejoin := func(c *client) {
		t.Helper()
		resp := c.do("POST", join, url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		if m := decode(t, resp); m["status"] != boxoffice.QueueAdmitted {
			t.Fatalf("rejoin during the turn answered %v, want status admitted", m)
		}
	}
	logIn := func(c *client) {
		t.Helper()
		wantStatus(t, c.do("POST", "/login", url.Values{"email": {acct.Email}, "password": {"correct horse"}}), http.StatusSeeOther)
	}
	before := ttl(fan)

	phone := app.newClient(t)
	logIn(phone)
	wantNoEntry(t, phone.do("GET", seatsPath(e.ID), nil, "Accept: application/json"), boxoffice.ReasonOtherSession)
	rejoin(phone)
	if after := ttl(phone); after <= 0 || after > before {
		t.Errorf("after the rejoin %v ms are left, want at most the %v ms left before it", after, before)
	}
	if m := getSeatMap(t, phone, e.ID); !slices.Equal(m.Holds.Seats, []string{"A-1-1"}) {
		t.Errorf("holds after moving the turn = %v, want A-1-1", m.Holds.Seats)
	}
	hold(t, phone, e.ID, "A-1-2")

	// The browser that had the turn is told where it went and how to get it
	// back, and opens nothing.
	wantNoEntry(t, fan.do("POST", holdsPath(e.ID), url.Values{"seat": {"A-1-3"}}, "Accept: application/json"), boxoffice.ReasonOtherSession)
	wantNoEntry(t, fan.do("GET", seatsPath(e.ID), nil, "Accept: application/json"), boxoffice.ReasonOtherSession)
	page := fan.do("GET", seatsPath(e.ID), nil)
	wantStatus(t, page, http.StatusForbidden)
	if d := doc(t, page); testid(d, "error-message") != views.In(views.English, views.NoEntryMsg(boxoffice.ReasonOtherSession)) || d.Find(`[data-testid="back-to-queue"]`).Length() != 1 {
		t.Error("the browser that lost the turn is not told why with a way back to the queue")
	}

	// Joining again there moves the turn back, as the page promises.
	wantStatus(t, fan.do("POST", join, url.Values{}), http.StatusSeeOther)
	if m := getSeatMap(t, fan, e.ID); !slices.Equal(m.Holds.Seats, []string{"A-1-1", "A-1-2"}) {
		t.Errorf("holds after moving the turn back = %v, want A-1-1 and A-1-2", m.Holds.Seats)
	}
	wantNoEntry(t, phone.do("GET", seatsPath(e.ID), nil, "Accept: application/json"), boxoffice.ReasonOtherSession)

	// Logging out ends the turn with its holds; logged in again, the fan is
	// told so, and joining again gives a new turn in the line.
	wantStatus(t, fan.do("POST", "/logout", url.Values{}), http.StatusSeeOther)
	logIn(fan)
	wantNoEntry(t, fan.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonLeft)
	resp := fan.do("POST", join, url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if m := decode(t, resp); m["status"] != boxoffice.QueueWaiting {
		t.Errorf("joining after logging out answered %v, want status waiting", m)
	}
	app.admit(t, boxoffice.AdmissionSettings{EventID: e.ID, Rate: 10, TokenTTL: time.Minute})
	if m := getSeatMap(t, fan, e.ID); len(m.Holds.Seats) != 0 {
		t.Errorf("holds in the new turn after logging out = %v, want none", m.Holds.Seats)
	}
}

// An event that does not exist is 404 not_found on every route of a fan's
// sale, those that need an entry token included, never 403 no_entry_token.
func TestEntry_UnknownEvent(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	fan, _ := app.newAccount(t, "lost@example.com", boxoffice.RoleFan)
	for _, r := range []struct{ method, path string }{
		{"GET", "/events/999999/entry"},
		{"POST", "/events/999999/orders"},
		{"POST", "/events/999999/leave"},
		{"POST", "/events/999999/holds"},
		{"DELETE", "/events/999999/holds/A-1-1"},
		{"GET", "/events/999999/seats"},
		{"GET", "/events/999999/seats/status"},
		{"GET", "/events/999999/queue/status"},
		{"POST", "/events/999999/queue"},
	} {
		for _, accept := range []string{"application/json", "text/html"} {
			form := url.Values(nil)
			if r.method == "POST" {
				form = url.Values{"seat": {"A-1-1"}}
			}
			resp := fan.do(r.method, r.path, form, "Accept: "+accept)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s (%s) = %d, want 404", r.method, r.path, accept, resp.StatusCode)
			}
			if accept == "application/json" {
				var body struct{ Error string }
				decodeJSON(t, resp, &body)
				if body.Error != boxoffice.ENOTFOUND {
					t.Errorf("%s %s: error %q, want %q", r.method, r.path, body.Error, boxoffice.ENOTFOUND)
				}
			} else {
				resp.Body.Close()
			}
		}
	}
}
