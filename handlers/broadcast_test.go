package handlers_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
)

// An admin's broadcast is refused when empty or long, with a sentence and
// nothing sent; otherwise it shows, as text, in the waiting room of a fan
// who opens it later, in the fan's seat-map refresh and on the live page,
// and is in the audit log.
func TestAdminBroadcast(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	path := fmt.Sprintf("/admin/events/%d/broadcast", ev.ID)
	admin, _ := app.newAccount(t, "admin@example.com", boxoffice.RoleAdmin)
	waiting, _ := app.newAccount(t, "waiting@example.com", boxoffice.RoleFan)
	shopper, _ := app.newAccount(t, "shopper@example.com", boxoffice.RoleFan)
	app.enter(t, shopper, ev.ID)
	wantStatus(t, waiting.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}), http.StatusSeeOther)

	wantStatus(t, waiting.do("POST", path, url.Values{"message": {"hi"}}), http.StatusForbidden)
	for message, want := range map[string]string{
		"   ":                    "Write a message to send to the fans.",
		strings.Repeat("가", 281): "A message may have at most 280 characters; this one has 281.",
	} {
		resp := admin.do("POST", path, url.Values{"message": {message}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusBadRequest)
		if m := decode(t, resp); m["message"] != want {
			t.Errorf("broadcast of %d characters: answer %v, want the sentence %q", len([]rune(message)), m, want)
		}
	}
	if n := app.queryInt(t, `SELECT count(*)::int FROM audit_log WHERE action = 'broadcast'`); n != 0 {
		t.Fatalf("refused broadcasts wrote %d audit rows", n)
	}
	d := doc(t, waiting.do("GET", fmt.Sprintf("/events/%d/queue", ev.ID), nil))
	if d.Find(`[data-testid="broadcast"]`).Length() != 0 {
		t.Error("the waiting room shows a broadcast before any was sent")
	}

	message := `Doors open late <script>alert(1)</script> & sorry`
	wantStatus(t, admin.do("POST", path, url.Values{"message": {message}}), http.StatusSeeOther)
	long := strings.Repeat("가", 280)
	resp := admin.do("POST", path, url.Values{"message": {"first, replaced"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	resp = admin.do("POST", path, url.Values{"message": {long}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if m := decode(t, resp); m["message"] != long {
		t.Errorf("broadcast answer %v, want the message", m)
	}
	wantStatus(t, admin.do("POST", path, url.Values{"message": {"  " + message + "\n"}}), http.StatusSeeOther)

	raw, err := io.ReadAll(waiting.do("GET", fmt.Sprintf("/events/%d/queue", ev.ID), nil).Body)
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	if d, err = goquery.NewDocumentFromReader(strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	if got := testid(d, "broadcast-message"); got != message || strings.Contains(body, "<script>alert") {
		t.Errorf("waiting room shows %q (raw script tag: %v), want the message as text", got, strings.Contains(body, "<script>alert"))
	}
	resp = shopper.do("GET", fmt.Sprintf("/events/%d/seats/status", ev.ID), nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if m := decode(t, resp); m["broadcast"] != message {
		t.Errorf("seat-map refresh broadcast = %v, want %q", m["broadcast"], message)
	}
	// The seat map page with its list of sections, the way in without
	// JavaScript, shows it (not hidden), and so does a section's list.
	resp = shopper.do("GET", fmt.Sprintf("/events/%d/seats", ev.ID), nil)
	wantStatus(t, resp, http.StatusOK)
	if d := doc(t, resp); testid(d, "broadcast-message") != message || d.Find(`[data-testid="broadcast"][hidden]`).Length() != 0 || d.Find(`[data-testid="sections"]`).Length() != 1 {
		t.Errorf("the seat map page shows the broadcast %q (hidden: %v), want %q shown beside the list of sections",
			testid(d, "broadcast-message"), d.Find(`[data-testid="broadcast"][hidden]`).Length() != 0, message)
	}
	resp = shopper.do("GET", fmt.Sprintf("/events/%d/seats?section=A", ev.ID), nil)
	wantStatus(t, resp, http.StatusOK)
	if got := testid(doc(t, resp), "broadcast-message"); got != message {
		t.Errorf("a section's list shows the broadcast %q, want %q", got, message)
	}
	if got := testid(doc(t, admin.do("GET", fmt.Sprintf("/admin/events/%d/live", ev.ID), nil)), "broadcast-current"); !strings.Contains(got, message) {
		t.Errorf("live page shows %q as the current broadcast", got)
	}
	if n := app.queryInt(t, `SELECT count(*)::int FROM audit_log WHERE action = 'broadcast' AND event_id = $1 AND admin_id IS NOT NULL`, ev.ID); n != 4 {
		t.Errorf("%d broadcasts in the audit log, want 4", n)
	}
	wantStatus(t, admin.do("POST", "/admin/events/999999/broadcast", url.Values{"message": {"hi"}}), http.StatusNotFound)
}

// Two instances on one Redis: a fan's waiting-room stream on B receives a
// broadcast posted on A.
func TestAdminBroadcast_TwoInstances(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	b := newTestAppOn(t, a.DB, a.Redis)
	ev := a.openEvent(t)
	admin, _ := a.newAccount(t, "admin@example.com", boxoffice.RoleAdmin)
	fan, _ := b.newAccount(t, "fan@example.com", boxoffice.RoleFan)
	wantStatus(t, fan.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}), http.StatusSeeOther)
	_, ch := stream(t, fan, ev.ID)
	if e := next(t, ch); e.name != "position" || testid(fragment(t, e), "broadcast") != "" {
		t.Fatalf("first event %q with a broadcast before any was sent:\n%s", e.name, e.data)
	}
	wantStatus(t, admin.do("POST", fmt.Sprintf("/admin/events/%d/broadcast", ev.ID), url.Values{"message": {"Seats added in section B"}}), http.StatusSeeOther)
	// The stream speaks every tick (100 ms); the broadcast is read at most
	// a second late: it comes within a few dozen events.
	for range 300 {
		e := next(t, ch)
		if got := testid(fragment(t, e), "broadcast-message"); got != "" {
			if got != "Seats added in section B" || e.name != "position" {
				t.Errorf("event %q shows %q, want the broadcast", e.name, got)
			}
			return
		}
	}
	t.Error("the stream on the other instance never showed the broadcast")
}
