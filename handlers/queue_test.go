package handlers_test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/boxoffice/boxoffice/views"
	"github.com/redis/go-redis/v9"
)

// newEvent creates a venue of 20 seats and an event on it whose queue opens
// at opens and whose sale ends at ends, published unless draft.
func (a *testApp) newEvent(t testing.TB, opens, ends time.Time, draft bool) *boxoffice.Event {
	t.Helper()
	ctx := context.Background()
	seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{{Name: "A", Rows: 2, SeatsPerRow: 10, Grade: "R"}})
	if err != nil {
		t.Fatal(err)
	}
	venue, err := (&store.Venues{DB: a.DB}).CreateVenue(ctx, "Hall", seats)
	if err != nil {
		t.Fatal(err)
	}
	in := boxoffice.NewEventInput()
	in.VenueID, in.Title = venue.ID, boxoffice.Text{"en": "Queue Night"}
	in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = opens.Truncate(time.Second), ends.Truncate(time.Second), ends.Add(time.Hour).Truncate(time.Second)
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": "R seat"}, Price: 100000}}
	ev, err := a.Srv.Events.CreateEvent(ctx, in)
	if err != nil {
		t.Fatalf("create event: %v %v", err, boxoffice.ErrorProblems(err))
	}
	switch {
	case draft:
	case ends.After(time.Now()):
		if ev, err = a.Srv.Events.PublishEvent(ctx, ev.ID); err != nil {
			t.Fatal(err)
		}
	default: // a sale that ended while on sale: PublishEvent refuses ended sales
		if _, err := a.DB.Pool.Exec(ctx, `UPDATE event SET status = 'on_sale' WHERE id = $1`, ev.ID); err != nil {
			t.Fatal(err)
		}
		ev.Status = boxoffice.EventOnSale
	}
	return ev
}

// openEvent is an on-sale event whose queue is open.
func (a *testApp) openEvent(t testing.TB) *boxoffice.Event {
	return a.newEvent(t, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), false)
}

// ticks numbers admission ticks for every test: each Admit needs a later tick.
var ticks atomic.Int64

// admit runs one admission tick of the event as the admitter would.
func (a *testApp) admit(t *testing.T, s boxoffice.AdmissionSettings) store.AdmitResult {
	t.Helper()
	if s.TokenTTL == 0 {
		s.TokenTTL = time.Minute
	}
	r, err := a.Srv.Queue.(*store.Queue).Admit(context.Background(), s, ticks.Add(1), time.Second)
	if err != nil || !r.Done {
		t.Fatalf("admit %+v: %+v, %v", s, r, err)
	}
	return r
}

// decode reads a JSON body.
func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", resp.Request.URL.Path, err)
	}
	return m
}

// position asks for the client's status as JSON and checks its status and
// position.
func position(t *testing.T, c *client, path, status string, pos int) map[string]any {
	t.Helper()
	resp := c.do("GET", path, nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	m := decode(t, resp)
	if m["status"] != status || m["position"] != float64(pos) || m["ahead"] != float64(max(pos-1, 0)) {
		t.Fatalf("status = %v, want %s at position %d", m, status, pos)
	}
	return m
}

// awaitPosition is position once the status shows status: a fan still
// waiting by the instance's figures is answered from them, which may be a
// tick old after an admission by another instance or a loss of the line.
func awaitPosition(t *testing.T, c *client, path, status string, pos int) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp := c.do("GET", path, nil, "Accept: application/json")
		if resp.StatusCode == http.StatusOK && decode(t, resp)["status"] == status {
			break
		}
	}
	return position(t, c, path, status, pos)
}

func TestQueue_Join(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	join := fmt.Sprintf("/events/%d/queue", ev.ID)

	t.Run("NotLoggedIn", func(t *testing.T) {
		c := app.newClient(t)
		wantStatus(t, c.do("POST", join, url.Values{}, "Accept: application/json"), http.StatusUnauthorized)
		back := "/login?next=" + url.QueryEscape(fmt.Sprintf("/events/%d", ev.ID))
		resp := c.do("POST", join, url.Values{}, "Referer: "+app.URL+fmt.Sprintf("/events/%d", ev.ID))
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != back {
			t.Errorf("a visitor's join from the event page redirects to %q, want %q", loc, back)
		}
		resp = c.do("GET", join, nil)
		wantStatus(t, resp, http.StatusSeeOther)
		if loc, want := resp.Header.Get("Location"), "/login?next="+url.QueryEscape(join); loc != want {
			t.Errorf("a visitor's waiting room redirects to %q, want %q", loc, want)
		}
		// The waiting room's poll: htmx would follow a redirect and swap the
		// log-in page in, so the whole page is sent to log in instead.
		resp = c.do("GET", join+"/status", nil, "HX-Request: true", "HX-Current-URL: "+app.URL+join)
		wantStatus(t, resp, http.StatusUnauthorized)
		if loc, want := resp.Header.Get("HX-Redirect"), "/login?next="+url.QueryEscape(join); loc != want {
			t.Errorf("a visitor's htmx poll gets HX-Redirect %q, want %q", loc, want)
		}
		resp = c.do("GET", join+"/status", nil, "HX-Request: true", "HX-Current-URL: https://elsewhere.example//evil.example/")
		if loc := resp.Header.Get("HX-Redirect"); loc != "/login?next=%2F" {
			t.Errorf("an htmx poll from a strange page gets HX-Redirect %q, want the log-in page leading home", loc)
		}
	})

	t.Run("OK", func(t *testing.T) {
		a, _ := app.newAccount(t, "a@example.com", boxoffice.RoleFan)
		b, _ := app.newAccount(t, "b@example.com", boxoffice.RoleFan)
		resp := a.do("POST", join, url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		m := decode(t, resp)
		if m["status"] != "waiting" || m["position"] != 1.0 || m["ahead"] != 0.0 || m["eta_seconds"] != 0.0 {
			t.Errorf("first join = %v, want waiting at 1, none ahead, no estimate before the first tick", m)
		}
		resp = b.do("POST", join, url.Values{})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != join {
			t.Errorf("an HTML join redirects to %q, want the waiting room %s", loc, join)
		}
		position(t, b, join+"/status", "waiting", 2)

		// Rejoining, from the same session or another one of the account,
		// keeps the first place.
		position(t, a, join+"/status", "waiting", 1)
		wantStatus(t, a.do("POST", join, url.Values{}), http.StatusSeeOther)
		position(t, a, join+"/status", "waiting", 1)
		a2 := app.newClient(t)
		wantStatus(t, a2.do("POST", "/login", url.Values{"email": {"a@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)
		resp = a2.do("POST", join, url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		if m := decode(t, resp); m["position"] != 1.0 {
			t.Errorf("rejoin from another session = %v, want position 1", m)
		}
		position(t, b, join+"/status", "waiting", 2)
	})

	t.Run("NotOpen", func(t *testing.T) {
		c, _ := app.newAccount(t, "early@example.com", boxoffice.RoleFan)
		opens := time.Date(2030, 3, 1, 11, 0, 0, 0, time.UTC)
		later := app.newEvent(t, opens, opens.Add(24*time.Hour), false)
		path := fmt.Sprintf("/events/%d/queue", later.ID)
		resp := c.do("POST", path, url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusConflict)
		m := decode(t, resp)
		if m["error"] != "queue_not_open" || m["queue_opens_at"] != "2030-03-01T11:00:00Z" {
			t.Errorf("early join = %v, want queue_not_open with queue_opens_at", m)
		}
		resp = c.do("POST", path, url.Values{})
		wantStatus(t, resp, http.StatusConflict)
		if msg := testid(doc(t, resp), "error-message"); !strings.Contains(msg, "Fri 1 Mar 2030, 20:00 KST") {
			t.Errorf("early join page says %q, want the opening in the event's zone (Seoul)", msg)
		}
		wantStatus(t, c.do("GET", path+"/status", nil, "Accept: application/json"), http.StatusConflict)
	})

	t.Run("SaleEnded", func(t *testing.T) {
		c, _ := app.newAccount(t, "late@example.com", boxoffice.RoleFan)
		ended := app.newEvent(t, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour), false)
		path := fmt.Sprintf("/events/%d/queue", ended.ID)
		resp := c.do("POST", path, url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusConflict)
		if m := decode(t, resp); m["error"] != "queue_not_open" {
			t.Errorf("late join = %v, want queue_not_open", m)
		}
		resp = c.do("POST", path, url.Values{})
		wantStatus(t, resp, http.StatusConflict)
		if msg := testid(doc(t, resp), "error-message"); !strings.Contains(msg, "sale has ended") {
			t.Errorf("late join page says %q, want the sale's end", msg)
		}
		page := c.do("GET", path, nil)
		wantStatus(t, page, http.StatusOK)
		if testid(doc(t, page), "queue-ended") == "" {
			t.Error("the waiting room of an ended sale does not say so")
		}
	})

	t.Run("Draft", func(t *testing.T) {
		c, _ := app.newAccount(t, "draft@example.com", boxoffice.RoleFan)
		draft := app.newEvent(t, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), true)
		wantStatus(t, c.do("POST", fmt.Sprintf("/events/%d/queue", draft.ID), url.Values{}, "Accept: application/json"), http.StatusNotFound)
	})
}

func TestQueue_WaitingRoom(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	path := fmt.Sprintf("/events/%d/queue", ev.ID)
	first, _ := app.newAccount(t, "first@example.com", boxoffice.RoleFan)
	fan, _ := app.newAccount(t, "fan@example.com", boxoffice.RoleFan)
	wantStatus(t, first.do("POST", path, url.Values{}), http.StatusSeeOther)

	page := func(c *client, query string) *goquery.Document {
		t.Helper()
		resp := c.do("GET", path+query, nil)
		wantStatus(t, resp, http.StatusOK)
		return doc(t, resp)
	}

	d := page(fan, "")
	if testid(d, "queue-not-in") == "" || d.Find(`form[action="`+path+`"] [data-testid="rejoin"]`).Length() != 1 {
		t.Error("before joining, the waiting room does not offer to join")
	}
	if d.Find("[sse-connect]").Length() != 0 {
		t.Error("a fan who is not in line gets a live stream")
	}

	wantStatus(t, fan.do("POST", path, url.Values{}), http.StatusSeeOther)
	for range 2 { // a reload keeps the place
		d = page(fan, "")
		if pos, ahead := testid(d, "queue-position"), testid(d, "queue-ahead"); pos != "2" || ahead != "1" {
			t.Fatalf("waiting room shows position %q, %q ahead; want 2 and 1", pos, ahead)
		}
	}
	if eta := testid(d, "queue-eta"); eta != "estimating…" {
		t.Errorf("estimated wait before the admitter's first tick %q, want estimating…", eta)
	}
	if v, _ := d.Find(`[data-testid="queue-progress"]`).Attr("value"); v != "0" {
		t.Errorf("progress at joining = %q, want 0", v)
	}
	room := d.Find("#waiting-room")
	if c, _ := room.Attr("sse-connect"); c != path+"/stream" || room.AttrOr("hx-ext", "") != "sse" || room.AttrOr("sse-close", "") != "close" {
		t.Errorf("waiting room SSE attributes: sse-connect=%q hx-ext=%q sse-close=%q", c, room.AttrOr("hx-ext", ""), room.AttrOr("sse-close", ""))
	}
	state := d.Find("#queue-state")
	if state.AttrOr("sse-swap", "") != "position,admitted" || state.AttrOr("hx-get", "") != path+"/status" ||
		!strings.HasPrefix(state.AttrOr("hx-trigger", ""), "every 2s") {
		t.Errorf("queue state swap attributes: %v", state.Nodes[0].Attr)
	}
	if d.Find("noscript").Text() != `<meta http-equiv="refresh" content="5">` || testid(d, "queue-refresh") == "" {
		t.Error("the waiting room has no refresh for browsers without JavaScript")
	}

	// The first fan is admitted: the second moves to the front, half-way.
	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1})
	d = page(fan, "")
	if pos, eta := testid(d, "queue-position"), testid(d, "queue-eta"); pos != "1" || eta != "about 1 s" {
		t.Errorf("after one admission at 1 fan/s the position is %q, the wait %q; want 1, about 1 s", pos, eta)
	}
	if v, _ := d.Find(`[data-testid="queue-progress"]`).Attr("value"); v != "50" {
		t.Errorf("progress from 2 to 1 = %q, want 50", v)
	}
	d = page(first, "")
	if href, _ := d.Find("[data-admitted-href]").Attr("data-admitted-href"); href != fmt.Sprintf("/events/%d/seats", ev.ID) {
		t.Errorf("admitted fan's page leads to %q, want the seat map", href)
	}
	if testid(d, "to-seats") == "" || d.Find("noscript").Text() != fmt.Sprintf(`<meta http-equiv="refresh" content="0;url=/events/%d/seats">`, ev.ID) {
		t.Error("the admitted page has no link, or no refresh without JavaScript, to the seat map")
	}

	// Paused: the fan keeps the place and is told.
	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1, Paused: true})
	d = page(fan, "")
	if testid(d, "queue-paused") == "" || testid(d, "queue-position") != "1" || testid(d, "queue-eta") != "paused" {
		t.Errorf("paused admission shows position %q, eta %q, paused notice %q", testid(d, "queue-position"), testid(d, "queue-eta"), testid(d, "queue-paused"))
	}

	// Sold out.
	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1, SoldOut: true})
	if d = page(fan, ""); testid(d, "queue-sold-out") == "" || d.Find("[sse-connect]").Length() != 0 {
		t.Error("a sold-out sale is not shown as such, or the page still follows the stream")
	}
}

// forgetRedis deletes the app's Redis keys that match pattern (after its
// prefix), as a Redis that lost them would.
func (a *testApp) forgetRedis(t *testing.T, pattern string) {
	t.Helper()
	ctx := context.Background()
	keys, err := storetest.Keys(ctx, a.Redis, a.Redis.Prefix+pattern)
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys %s: %v, %v", pattern, keys, err)
	}
	if err := storetest.DeleteKeys(ctx, a.Redis, keys); err != nil {
		t.Fatal(err)
	}
}

// wantQueueReset checks that the waiting room at path (/events/{id}/queue)
// tells the client that the line was reset and offers to join again: the
// page (which works without JavaScript: a form, no stream), its htmx
// fragment, and the JSON status.
func wantQueueReset(t *testing.T, c *client, path string) {
	t.Helper()
	awaitPosition(t, c, path+"/status", "reset", 0)
	resp := c.do("GET", path, nil)
	wantStatus(t, resp, http.StatusOK)
	d := doc(t, resp)
	if msg := testid(d, "queue-reset"); !strings.HasPrefix(msg, "The line was reset.") {
		t.Errorf("reset message %q, want it to say that the line was reset", msg)
	}
	if b := d.Find(`form[action="` + path + `"][method="post"] [data-testid="rejoin"]`); strings.TrimSpace(b.Text()) != "Join again" {
		t.Errorf("the reset state's join button says %q, want Join again", strings.TrimSpace(b.Text()))
	}
	if d.Find("[sse-connect]").Length() != 0 {
		t.Error("the reset page still follows the stream")
	}
	resp = c.do("GET", path+"/status", nil, "HX-Request: true")
	wantStatus(t, resp, http.StatusOK)
	if doc(t, resp).Find(`[data-queue-status="reset"][data-queue-final] [data-testid="queue-reset"]`).Length() != 1 {
		t.Error("the htmx status is not the final reset fragment")
	}
}

// After Redis lost the line, a fan who had a place is told that the line was
// reset, and joining again gives a new place: with the session kept, and
// with everything lost (the fan is logged out, and the epoch cookie tells
// the line's loss after log-in). The cookie grants nothing.
func TestQueue_Reset(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	path := fmt.Sprintf("/events/%d/queue", ev.ID)

	t.Run("LineLost", func(t *testing.T) {
		fan, _ := app.newAccount(t, "reset@example.com", boxoffice.RoleFan)
		wantStatus(t, fan.do("POST", path, url.Values{}), http.StatusSeeOther)
		app.forgetRedis(t, "queue*")
		wantQueueReset(t, fan, path)
		wantStatus(t, fan.do("POST", path, url.Values{}), http.StatusSeeOther)
		position(t, fan, path+"/status", "waiting", 1)
	})

	t.Run("EverythingLost", func(t *testing.T) {
		fan, _ := app.newAccount(t, "lost@example.com", boxoffice.RoleFan)
		resp := fan.do("POST", path, url.Values{})
		wantStatus(t, resp, http.StatusSeeOther)
		ck := responseCookie(resp, "boxoffice_queue_epoch")
		if ck == nil || !boxoffice.ValidQueueEpoch(strings.Split(ck.Value, ".")[0]) || ck.Path != path || !ck.HttpOnly || ck.Secure ||
			ck.SameSite != http.SameSiteLaxMode || ck.MaxAge <= 0 || ck.MaxAge > 24*60*60 {
			t.Fatalf("join sets epoch cookie %+v, want a valid epoch, Path %s, HttpOnly, SameSite=Lax, not Secure over http, Max-Age up to 24 h", ck, path)
		}
		position(t, fan, path+"/status", "waiting", 2)

		app.forgetRedis(t, "*")
		waitFor(t, "the instance to drop its copy of the lost session", func() bool {
			resp = fan.do("GET", path, nil)
			return resp.StatusCode != http.StatusOK
		})
		wantStatus(t, resp, http.StatusSeeOther)
		login := resp.Header.Get("Location")
		if login != "/login?next="+url.QueryEscape(path) {
			t.Fatalf("the logged-out fan's waiting room redirects to %q, want the log-in page leading back", login)
		}
		next := doc(t, fan.do("GET", login, nil)).Find(`input[name="next"]`).AttrOr("value", "")
		resp = fan.do("POST", "/login", url.Values{"email": {"lost@example.com"}, "password": {"correct horse"}, "next": {next}})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != path {
			t.Fatalf("log-in leads to %q, want the waiting room %s", loc, path)
		}
		wantQueueReset(t, fan, path)
		wantStatus(t, fan.do("POST", path, url.Values{}), http.StatusSeeOther)
		position(t, fan, path+"/status", "waiting", 1)
	})

	t.Run("ForgedCookie", func(t *testing.T) {
		fan, forger := app.newAccount(t, "forger@example.com", boxoffice.RoleFan)
		u, _ := url.Parse(app.URL + path)
		forge := func(value string) {
			fan.Jar.SetCookies(u, []*http.Cookie{{Name: "boxoffice_queue_epoch", Value: value, Path: path}})
		}
		for _, bad := range []string{"short", "AbCdEfGhIjKlMnOpQr+/09", strings.Repeat("A", 23), "AbCdEfGhIjKlMnOp%r-_09"} {
			forge(bad)
			resp := fan.do("GET", path+"/status", nil, "Accept: application/json")
			wantStatus(t, resp, http.StatusNotFound)
			wantErrorCode(t, resp, boxoffice.ENOTINQUEUE)
		}
		// A cookie of another account is not read.
		forge("AbCdEfGhIjKlMnOpQr-_09." + strconv.FormatInt(forger.ID+1, 10) + ".0.0")
		resp := fan.do("GET", path+"/status", nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusNotFound)
		wantErrorCode(t, resp, boxoffice.ENOTINQUEUE)
		// A place far down the line that the account never had: the
		// waiting room shows it, and that is all it does.
		forge("AbCdEfGhIjKlMnOpQr-_09." + strconv.FormatInt(forger.ID, 10) + ".1000.1000")
		if r := app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1000}); slices.Contains(r.Admitted, forger.ID) {
			t.Error("a forged place cookie got its fan admitted")
		}
		// A well-shaped epoch that is not the line's: the page says the line
		// was reset, and that is all it does.
		forge("AbCdEfGhIjKlMnOpQr-_09." + strconv.FormatInt(forger.ID, 10) + ".0.0")
		wantQueueReset(t, fan, path)
		if r := app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1000}); slices.Contains(r.Admitted, forger.ID) {
			t.Error("a forged epoch cookie got its fan admitted")
		}
		resp = fan.do("GET", seatsPath(ev.ID), nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusForbidden)
		wantErrorCode(t, resp, boxoffice.ENOENTRYTOKEN)
	})

	t.Run("Secure", func(t *testing.T) {
		secure := newTestApp(t, func(s *handlers.Server) { s.Sessions.Cookie.Secure = true })
		sev := secure.openEvent(t)
		secure.newAccount(t, "secure@example.com", boxoffice.RoleFan)
		session := sessionCookie(secure.newClient(t).do("POST", "/login", url.Values{"email": {"secure@example.com"}, "password": {"correct horse"}}))
		if session == nil || !session.Secure {
			t.Fatalf("session cookie %+v, want Secure", session)
		}
		resp := secure.newClient(t).do("POST", fmt.Sprintf("/events/%d/queue", sev.ID), url.Values{}, "Cookie: boxoffice_session="+session.Value)
		wantStatus(t, resp, http.StatusSeeOther)
		if ck := responseCookie(resp, "boxoffice_queue_epoch"); ck == nil || !ck.Secure {
			t.Errorf("epoch cookie %+v on a site whose session cookie is Secure, want Secure", ck)
		}
	})
}

func TestQueue_Status(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	path := fmt.Sprintf("/events/%d/queue", ev.ID)
	fan, _ := app.newAccount(t, "status@example.com", boxoffice.RoleFan)

	resp := fan.do("GET", path+"/status", nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusNotFound)
	if m := decode(t, resp); m["error"] != "not_in_queue" {
		t.Errorf("status before joining = %v, want not_in_queue", m)
	}
	resp = fan.do("GET", path+"/status", nil, "HX-Request: true")
	wantStatus(t, resp, http.StatusOK)
	d := doc(t, resp)
	if d.Find("html").Length() != 0 && d.Find("body > *").Length() != 1 || d.Find(`[data-queue-status="not_in_queue"][data-queue-final]`).Length() != 1 {
		t.Errorf("htmx status before joining is not the final not-in-queue fragment")
	}

	wantStatus(t, fan.do("POST", path, url.Values{}), http.StatusSeeOther)
	m := position(t, fan, path+"/status", "waiting", 1)
	if m["paused"] != false || m["eta_seconds"] != 0.0 {
		t.Errorf("status = %v, want not paused, no estimate yet", m)
	}
	resp = fan.do("GET", path+"/status", nil, "HX-Request: true")
	wantStatus(t, resp, http.StatusOK)
	d = doc(t, resp)
	if d.Find("nav").Length() != 0 || testid(d, "queue-position") != "1" || d.Find("[data-queue-final]").Length() != 0 {
		t.Errorf("htmx status is not the waiting fragment at position 1")
	}

	// The join counted on /metrics.
	metrics := app.newClient(t).do("GET", "/metrics", nil)
	body, _ := io.ReadAll(metrics.Body)
	if want := fmt.Sprintf(`boxoffice_queue_joins_total{event="%d"} 1`, ev.ID); !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %s", want)
	}
	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 5})
	position(t, fan, path+"/status", "admitted", 0)
	metrics = app.newClient(t).do("GET", "/metrics", nil)
	body, _ = io.ReadAll(metrics.Body)
	for _, want := range []string{
		fmt.Sprintf(`boxoffice_queue_admissions_total{event="%d"} 1`, ev.ID),
		fmt.Sprintf(`boxoffice_queue_waiting{event="%d"} 0`, ev.ID),
		fmt.Sprintf(`boxoffice_queue_live_tokens{event="%d"} 1`, ev.ID),
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// events reads the server-sent events of a stream into a channel, closed
// when the stream ends.
func events(body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent)
	go func() {
		defer close(ch)
		s := bufio.NewScanner(body)
		var e sseEvent
		for s.Scan() {
			line := s.Text()
			switch {
			case line == "":
				if e.name != "" {
					ch <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.data += strings.TrimPrefix(line, "data: ") + "\n"
			}
		}
	}()
	return ch
}

// next returns the next event, failing the test if the stream ends or stays
// silent for 10 s (a stream should speak every tick, 100 ms here).
func next(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended, want another event")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return sseEvent{}
}

// stream opens the client's SSE stream of the event.
func stream(t *testing.T, c *client, eventID int64) (*http.Response, <-chan sseEvent) {
	t.Helper()
	resp := c.do("GET", fmt.Sprintf("/events/%d/queue/stream", eventID), nil, "Accept: text/event-stream")
	wantStatus(t, resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream Content-Type %q", ct)
	}
	return resp, events(resp.Body)
}

func fragment(t *testing.T, e sseEvent) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(e.data))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestQueue_Stream(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	path := fmt.Sprintf("/events/%d/queue", ev.ID)
	first, _ := app.newAccount(t, "one@example.com", boxoffice.RoleFan)
	fan, _ := app.newAccount(t, "two@example.com", boxoffice.RoleFan)
	wantStatus(t, first.do("POST", path, url.Values{}), http.StatusSeeOther)
	wantStatus(t, fan.do("POST", path, url.Values{}), http.StatusSeeOther)

	_, ch := stream(t, fan, ev.ID)
	e := next(t, ch)
	if e.name != "position" || testid(fragment(t, e), "queue-position") != "2" {
		t.Fatalf("first event %q: %s; want position 2", e.name, e.data)
	}

	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1})
	for e = next(t, ch); testid(fragment(t, e), "queue-position") == "2"; e = next(t, ch) {
	}
	if e.name != "position" || testid(fragment(t, e), "queue-position") != "1" || testid(fragment(t, e), "queue-ahead") != "0" {
		t.Fatalf("after the first admission: %q: %s; want position 1, none ahead", e.name, e.data)
	}

	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1})
	for e = next(t, ch); e.name == "position"; e = next(t, ch) {
	}
	if e.name != "admitted" {
		t.Fatalf("after the fan's admission: %q, want admitted", e.name)
	}
	if href, _ := fragment(t, e).Find("[data-admitted-href]").Attr("data-admitted-href"); href != fmt.Sprintf("/events/%d/seats", ev.ID) {
		t.Errorf("admitted fragment leads to %q, want the seat map", href)
	}
	if e = next(t, ch); e.name != "close" {
		t.Errorf("after admitted came %q, want close", e.name)
	}
	if _, ok := <-ch; ok {
		t.Error("the stream goes on after close")
	}
}

// When an account in line has the waiting room open in two browsers, the
// turn goes to the session the place is bound to: that stream says
// admitted, the other says the turn is in another browser (as its poll
// does) and neither leads the other to the seat map.
func TestQueue_Stream_OtherSession(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	first, _ := app.newAccount(t, "both@example.com", boxoffice.RoleFan)
	wantStatus(t, first.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}), http.StatusSeeOther)
	second := app.newClient(t)
	wantStatus(t, second.do("POST", "/login", url.Values{"email": {"both@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)

	_, bound := stream(t, first, ev.ID)
	_, other := stream(t, second, ev.ID)
	for _, ch := range []<-chan sseEvent{bound, other} {
		if e := next(t, ch); e.name != "position" || testid(fragment(t, e), "queue-position") != "1" {
			t.Fatalf("first event %q: %s; want position 1", e.name, e.data)
		}
	}
	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1})

	e := next(t, bound)
	for ; e.name == "position"; e = next(t, bound) {
	}
	if e.name != "admitted" {
		t.Fatalf("the bound session's stream: %q %s, want admitted", e.name, e.data)
	}
	for e = next(t, other); e.name == "position" && fragment(t, e).Find(`[data-queue-status="waiting"]`).Length() == 1; e = next(t, other) {
	}
	if e.name != "position" || fragment(t, e).Find(`[data-queue-status="other_session"]`).Length() != 1 {
		t.Fatalf("the other session's stream: %q %s, want the other-session state", e.name, e.data)
	}
	if fragment(t, e).Find("[data-admitted-href]").Length() != 0 {
		t.Errorf("the other session's fragment leads to the seat map: %s", e.data)
	}
	if e = next(t, other); e.name != "close" {
		t.Errorf("then %q, want close", e.name)
	}
}

// A stream of a fan who is not in line says so, once, and ends.
func TestQueue_Stream_NotInQueue(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	fan, _ := app.newAccount(t, "none@example.com", boxoffice.RoleFan)
	_, ch := stream(t, fan, ev.ID)
	if e := next(t, ch); e.name != "position" || fragment(t, e).Find(`[data-queue-status="not_in_queue"]`).Length() != 1 {
		t.Fatalf("first event %q: %s; want the not-in-queue state", e.name, e.data)
	}
	if e := next(t, ch); e.name != "close" {
		t.Fatalf("then %q, want close", e.name)
	}
}

// When the server begins to shut down (Stopping), open streams end, so the
// drain can finish.
func TestQueue_Stream_Stopping(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	fans := make([]<-chan sseEvent, 3)
	for i := range fans {
		c, _ := app.newAccount(t, fmt.Sprintf("stop%d@example.com", i), boxoffice.RoleFan)
		wantStatus(t, c.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}), http.StatusSeeOther)
		_, fans[i] = stream(t, c, ev.ID)
		next(t, fans[i])
	}
	app.Stop()
	for i, ch := range fans {
		deadline := time.After(10 * time.Second)
	drain:
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					break drain
				}
			case <-deadline:
				t.Fatalf("stream %d still open 10 s after Stopping", i)
			}
		}
	}
}

// joinedFan signs up a fan, logs in and joins the event's queue, and
// returns the logged-in client and its position; safe to call from many
// goroutines (it reports failures with t.Error and returns nil).
func (a *testApp) joinedFan(t *testing.T, eventID int64, email string) (*client, int) {
	c := a.newClient(t)
	resp, err := c.PostForm(a.URL+"/signup", signupForm(email, "correct horse", email))
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Errorf("sign up %s: %v, %v", email, resp, err)
		return nil, 0
	}
	resp.Body.Close()
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/events/%d/queue", a.URL, eventID), nil)
	req.Header.Set("Accept", "application/json")
	if resp, err = c.Do(req); err != nil {
		t.Errorf("join %s: %v", email, err)
		return nil, 0
	}
	defer resp.Body.Close()
	var p struct{ Position int }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("join %s: status %d, %v", email, resp.StatusCode, err)
		return nil, 0
	}
	return c, p.Position
}

// positionsHook counts the reads of queue positions (queue_positions.lua, see
// positionsRead) and the most fans one of them read.
type positionsHook struct {
	reads, most atomic.Int64
}

func (h *positionsHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *positionsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n, ok := positionsRead(cmd); ok {
			h.reads.Add(1)
			for m := h.most.Load(); int64(n) > m && !h.most.CompareAndSwap(m, int64(n)); m = h.most.Load() {
			}
		}
		return err
	}
}
func (h *positionsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// positionsLua is the store's script that reads queue positions.
var positionsLua = sync.OnceValue(func() string {
	b, err := os.ReadFile("../store/lua/queue_positions.lua")
	if err != nil {
		panic(err)
	}
	return string(b)
})

// positionsRead reports whether cmd is a read of queue positions that Redis
// answered (queue_positions.lua by its hash or, the first time, its
// source), and for how many fans: its ARGV are the number of stats fields,
// the fields, then the fans.
func positionsRead(cmd redis.Cmder) (fans int, ok bool) {
	a := cmd.Args()
	if cmd.Err() != nil || len(a) < 4 {
		return 0, false
	}
	switch src := positionsLua(); cmd.Name() {
	case "evalsha_ro":
		ok = a[1] == fmt.Sprintf("%x", sha1.Sum([]byte(src)))
	case "eval_ro":
		ok = a[1] == src
	}
	keys, _ := a[2].(int)
	if !ok || len(a) < 4+keys {
		return 0, false
	}
	argv := a[3+keys:]
	fields, _ := argv[0].(int)
	return len(argv) - 1 - fields, true
}

// However many fans of an event are connected to an instance, it reads
// their positions once per tick, all in one Redis round trip; fans come
// and go concurrently, and the event's fan-out stops and starts again
// between rounds.
func TestQueue_Stream_OneReadPerTick(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	const fans = 200
	clients, positions := make([]*client, fans), make([]int, fans)
	var setup sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range clients {
		setup.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			clients[i], positions[i] = app.joinedFan(t, ev.ID, fmt.Sprintf("crowd%d@example.com", i))
		})
	}
	setup.Wait()
	if t.Failed() {
		t.FailNow()
	}
	hook := &positionsHook{}
	app.Redis.Client.AddHook(hook)
	for round := range 2 {
		hook.reads.Store(0)
		hook.most.Store(0)
		var all, first sync.WaitGroup
		first.Add(fans)
		var got atomic.Int64
		for i, c := range clients {
			all.Go(func() {
				connected := sync.OnceFunc(first.Done)
				defer connected()
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/events/%d/queue/stream", app.URL, ev.ID), nil)
				resp, err := c.Client.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Errorf("round %d, fan %d: stream %v, %v", round, i, resp, err)
					return
				}
				ch := events(resp.Body)
				defer func() {
					resp.Body.Close()
					for range ch { // let the reader end
					}
				}()
				for n := range 3 {
					select {
					case e, ok := <-ch:
						if !ok || e.name != "position" || !strings.Contains(e.data, `data-testid="queue-position">`+strconv.Itoa(positions[i])+`<`) {
							t.Errorf("round %d, fan %d: event %q %.300q (open %v), want position %d", round, i, e.name, e.data, ok, positions[i])
							return
						}
						got.Add(1)
					case <-time.After(10 * time.Second):
						t.Errorf("round %d, fan %d: no event within 10 s", round, i)
						return
					}
					if n == 0 { // stay until every fan is connected
						connected()
						first.Wait()
					}
				}
			})
		}
		all.Wait()
		if t.Failed() {
			t.FailNow()
		}
		reads, most := hook.reads.Load(), hook.most.Load()
		t.Logf("round %d: %d positions pushed, read in %d round trips", round, got.Load(), reads)
		if most != fans {
			t.Errorf("round %d: the largest read covered %d fans, want all %d in one", round, most, fans)
		}
		if reads >= fans {
			t.Errorf("round %d: %d round trips for %d fans' %d updates, want one per tick, far fewer than fans", round, reads, fans, got.Load())
		}
	}
}

// A fan who bought the event's limit gets no new turn: 409 limit_reached
// with a sentence, as JSON and as a page, and no place in line.
func TestQueue_Join_LimitReached(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	c, acct := app.newAccount(t, "max@example.com", boxoffice.RoleFan)
	app.enter(t, c, ev.ID)
	app.hold(t, acct, ev.ID, "A-1-1", "A-1-2", "A-1-3", "A-1-4", "A-1-5")
	resp := c.do("POST", fmt.Sprintf("/events/%d/orders", ev.ID), url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusCreated)
	var o orderAnswer
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, c.do("GET", app.payAtSandbox(t, c, o, "pay", ""), nil), http.StatusSeeOther)

	join := fmt.Sprintf("/events/%d/queue", ev.ID)
	resp = c.do("POST", join, url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusConflict)
	m := decode(t, resp)
	if m["error"] != boxoffice.ELIMITREACHED || !strings.Contains(fmt.Sprint(m["message"]), "5 tickets") {
		t.Errorf("join at the limit = %v, want limit_reached saying the limit", m)
	}
	resp = c.do("POST", join, url.Values{})
	wantStatus(t, resp, http.StatusConflict)
	if msg := testid(doc(t, resp), "error-message"); !strings.Contains(msg, "cannot join the queue again") {
		t.Errorf("join page at the limit says %q, want the limit's sentence", msg)
	}
	st, err := app.Srv.Queue.QueueStats(context.Background(), ev.ID)
	if err != nil || st.Waiting != 0 {
		t.Errorf("waiting after refused joins = %d (%v), want 0", st.Waiting, err)
	}
}

// A turn ends when the fan presses "Leave the sale" (holds released), when
// the fan's order is confirmed and nothing more is held, and at log-out.
func TestQueue_TurnEnds(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	entry := fmt.Sprintf("/events/%d/entry", ev.ID)

	t.Run("Leave", func(t *testing.T) {
		c, acct := app.newAccount(t, "leaver@example.com", boxoffice.RoleFan)
		app.enter(t, c, ev.ID)
		app.hold(t, acct, ev.ID, "A-1-9")
		page := c.do("GET", fmt.Sprintf("/events/%d/seats", ev.ID), nil)
		wantStatus(t, page, http.StatusOK)
		if testid(doc(t, page), "leave") == "" {
			t.Fatal("the seat map has no Leave the sale button")
		}
		resp := c.do("POST", fmt.Sprintf("/events/%d/leave", ev.ID), url.Values{})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != fmt.Sprintf("/events/%d", ev.ID) {
			t.Errorf("leaving redirects to %q, want the event page", loc)
		}
		wantNoEntry(t, c.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonLeft)
		if mine, _, err := app.Srv.Holds.MyHolds(context.Background(), ev.ID, acct.ID); err != nil || len(mine) != 0 {
			t.Errorf("holds after leaving = %v (%v), want none", mine, err)
		}
		resp = c.do("POST", fmt.Sprintf("/events/%d/leave", ev.ID), url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusForbidden)
		wantErrorCode(t, resp, boxoffice.ENOENTRYTOKEN)
	})

	t.Run("Confirmed", func(t *testing.T) {
		c, acct := app.newAccount(t, "buyer2@example.com", boxoffice.RoleFan)
		app.enter(t, c, ev.ID)
		app.hold(t, acct, ev.ID, "A-1-1")
		resp := c.do("POST", fmt.Sprintf("/events/%d/orders", ev.ID), url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusCreated)
		var o orderAnswer
		if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, c.do("GET", entry, nil, "Accept: application/json"), http.StatusOK)
		wantStatus(t, c.do("GET", app.payAtSandbox(t, c, o, "pay", ""), nil), http.StatusSeeOther)
		wantNoEntry(t, c.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonDone)
		page := c.do("GET", seatsPath(ev.ID), nil)
		wantStatus(t, page, http.StatusForbidden)
		if testid(doc(t, page), "error-message") != views.In(views.English, views.NoEntryMsg(boxoffice.ReasonDone)) {
			t.Error("a fan whose turn ended with the order is not told so on the seat map page")
		}
	})

	t.Run("LogOut", func(t *testing.T) {
		c, acct := app.newAccount(t, "goer@example.com", boxoffice.RoleFan)
		app.enter(t, c, ev.ID)
		app.hold(t, acct, ev.ID, "A-1-7")
		wantStatus(t, c.do("POST", "/logout", url.Values{}), http.StatusSeeOther)
		if err := app.Srv.Queue.CheckEntry(context.Background(), ev.ID, acct.ID, "any"); boxoffice.NoEntryReason(err) != boxoffice.ReasonLeft {
			t.Errorf("entry after log-out = %v, want ended", err)
		}
		if mine, _, err := app.Srv.Holds.MyHolds(context.Background(), ev.ID, acct.ID); err != nil || len(mine) != 0 {
			t.Errorf("holds after log-out = %v (%v), want none", mine, err)
		}
	})
}

// Open waiting-room streams are capped per session and per address: the
// stream over a cap is refused with 429 (the page then polls), also when
// hundreds of streams of one session open at once.
func TestQueue_Stream_Caps(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, func(s *handlers.Server) { s.StreamsPerSession, s.StreamsPerAddress = 4, 6 })
	ev := app.openEvent(t)
	path := fmt.Sprintf("/events/%d/queue/stream", ev.ID)
	a, _ := app.newAccount(t, "tabs@example.com", boxoffice.RoleFan)
	b, _ := app.newAccount(t, "neighbour@example.com", boxoffice.RoleFan)
	wantStatus(t, a.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}), http.StatusSeeOther)

	statuses := make([]int, 300)
	storetest.AtOnce(len(statuses), func(i int) {
		resp := a.do("GET", path, nil, "Accept: text/event-stream")
		statuses[i] = resp.StatusCode
		if after, err := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode == http.StatusTooManyRequests && (err != nil || after < 1) {
			t.Errorf("refused stream: Retry-After %q, want whole seconds, at least 1", resp.Header.Get("Retry-After"))
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return
		}
		t.Cleanup(func() { resp.Body.Close() })
	})
	ok, refused := 0, 0
	for _, st := range statuses {
		switch st {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Errorf("stream answered %d, want 200 or 429", st)
		}
	}
	if ok != 4 || refused != 296 {
		t.Fatalf("%d streams of one session opened and %d refused, want 4 and 296", ok, refused)
	}
	// Another session from the same address, in line too so that its
	// streams stay open: two more streams reach the address's cap of six.
	wantStatus(t, b.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}), http.StatusSeeOther)
	for i := range 3 {
		resp := b.do("GET", path, nil, "Accept: text/event-stream")
		want := http.StatusOK
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("stream %d of a second session answered %d, want %d", i, resp.StatusCode, want)
		}
		if want == http.StatusOK {
			t.Cleanup(func() { resp.Body.Close() })
		} else {
			resp.Body.Close()
		}
	}
	resp := b.do("GET", path, nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusTooManyRequests)
	wantErrorCode(t, resp, boxoffice.ERATELIMITED)
}

// wantStatusReason asks for the client's queue status as JSON and wants 404
// not_in_queue with the reason, then the waiting room page, which must show
// the state testid and a join button.
func wantStatusReason(t *testing.T, c *client, eventID int64, reason, state string) {
	t.Helper()
	join := fmt.Sprintf("/events/%d/queue", eventID)
	resp := c.do("GET", join+"/status", nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusNotFound)
	if m := decode(t, resp); m["error"] != "not_in_queue" || m["reason"] != reason {
		t.Errorf("status = %v, want not_in_queue for reason %s", m, reason)
	}
	for _, path := range []string{join, join + "/status"} {
		resp = c.do("GET", path, nil)
		wantStatus(t, resp, http.StatusOK)
		d := doc(t, resp)
		if got := d.Find(`[data-testid="queue-state"]`).AttrOr("data-queue-status", ""); got != state {
			t.Errorf("GET %s shows state %q, want %q", path, got, state)
		}
		if d.Find(`form[action="`+join+`"] button`).Length() != 1 {
			t.Errorf("GET %s offers no way back into the queue", path)
		}
	}
}

// The waiting room says why a turn ended as GET /entry does: the fan left
// (the leave button, or log-out), or the fan's order was confirmed.
func TestQueue_StatusSaysWhyTheTurnEnded(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	entry := fmt.Sprintf("/events/%d/entry", ev.ID)

	t.Run("Left", func(t *testing.T) {
		c, acct := app.newAccount(t, "left@example.com", boxoffice.RoleFan)
		app.enter(t, c, ev.ID)
		app.hold(t, acct, ev.ID, "A-1-2")
		wantStatus(t, c.do("POST", fmt.Sprintf("/events/%d/leave", ev.ID), url.Values{}), http.StatusSeeOther)
		wantNoEntry(t, c.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonLeft)
		wantStatusReason(t, c, ev.ID, boxoffice.ReasonLeft, boxoffice.QueueLeft)
	})

	t.Run("LogOutAndInAgain", func(t *testing.T) {
		c, _ := app.newAccount(t, "again@example.com", boxoffice.RoleFan)
		app.enter(t, c, ev.ID)
		wantStatus(t, c.do("POST", "/logout", url.Values{}), http.StatusSeeOther)
		wantStatus(t, c.do("POST", "/login", url.Values{"email": {"again@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)
		wantNoEntry(t, c.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonLeft)
		wantStatusReason(t, c, ev.ID, boxoffice.ReasonLeft, boxoffice.QueueLeft)
	})

	t.Run("Done", func(t *testing.T) {
		c, acct := app.newAccount(t, "done@example.com", boxoffice.RoleFan)
		app.enter(t, c, ev.ID)
		app.hold(t, acct, ev.ID, "A-1-3")
		resp := c.do("POST", fmt.Sprintf("/events/%d/orders", ev.ID), url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusCreated)
		var o orderAnswer
		if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, c.do("GET", app.payAtSandbox(t, c, o, "pay", ""), nil), http.StatusSeeOther)
		wantNoEntry(t, c.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonDone)
		wantStatusReason(t, c, ev.ID, boxoffice.ReasonDone, boxoffice.QueueDone)
	})
}

// A fan admitted in one browser who logs in in another is not told there
// that the turn came: the waiting room says, as GET /entry does, that the
// turn is in the other browser, and joining again here moves it.
func TestQueue_StatusOtherSession(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	join, entry := fmt.Sprintf("/events/%d/queue", ev.ID), fmt.Sprintf("/events/%d/entry", ev.ID)
	first, _ := app.newAccount(t, "two@example.com", boxoffice.RoleFan)
	app.enter(t, first, ev.ID)
	position(t, first, join+"/status", boxoffice.QueueAdmitted, 0)

	second := app.newClient(t)
	wantStatus(t, second.do("POST", "/login", url.Values{"email": {"two@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)
	wantNoEntry(t, second.do("GET", entry, nil, "Accept: application/json"), boxoffice.ReasonOtherSession)
	wantStatusReason(t, second, ev.ID, boxoffice.ReasonOtherSession, boxoffice.QueueOtherSession)
	position(t, first, join+"/status", boxoffice.QueueAdmitted, 0)

	// Joining again here moves the turn: this browser is admitted, the
	// first one is told the turn moved.
	wantStatus(t, second.do("POST", join, url.Values{}, "Accept: application/json"), http.StatusOK)
	position(t, second, join+"/status", boxoffice.QueueAdmitted, 0)
	wantStatus(t, second.do("GET", entry, nil, "Accept: application/json"), http.StatusOK)
	wantStatusReason(t, first, ev.ID, boxoffice.ReasonOtherSession, boxoffice.QueueOtherSession)
}
