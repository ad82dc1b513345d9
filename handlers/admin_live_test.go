package handlers_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
)

func TestAdminLive(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	live, admission := fmt.Sprintf("/admin/events/%d/live", ev.ID), fmt.Sprintf("/admin/events/%d/admission", ev.ID)
	admin, _ := app.newAccount(t, "admin@example.com", boxoffice.RoleAdmin)
	for i := range 3 {
		fan, _ := app.newAccount(t, fmt.Sprintf("fan%d@example.com", i), boxoffice.RoleFan)
		wantStatus(t, fan.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}), http.StatusSeeOther)
		if i == 0 {
			wantStatus(t, fan.do("GET", live, nil), http.StatusForbidden)
			wantStatus(t, fan.do("POST", admission, url.Values{"paused": {"true"}}), http.StatusForbidden)
		}
	}
	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1})

	resp := admin.do("GET", live, nil)
	wantStatus(t, resp, http.StatusOK)
	d := doc(t, resp)
	for id, want := range map[string]string{
		"live-waiting": "2", "live-admitted": "1", "live-tokens": "1", "live-rate": "100/s", "live-status": "running",
	} {
		if got := testid(d, id); got != want {
			t.Errorf("live page %s = %q, want %q", id, got, want)
		}
	}
	if d.Find(`#live-stats[hx-get="`+live+`"][hx-trigger="every 1s"]`).Length() != 1 || testid(d, "pause") == "" {
		t.Error("the live page does not poll its figures, or has no pause button")
	}
	resp = admin.do("GET", live, nil, "HX-Request: true")
	wantStatus(t, resp, http.StatusOK)
	if d := doc(t, resp); d.Find("nav").Length() != 0 || testid(d, "live-waiting") != "2" {
		t.Error("the htmx poll does not get the figures alone")
	}
	resp = admin.do("GET", live, nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	m := decode(t, resp)
	keys := slices.Sorted(maps.Keys(m))
	if want := []string{"admitted", "blocked", "currency", "free", "grades", "held", "live_tokens", "orders_last_minute", "payment_failures", "refunds", "revenue", "sold", "waiting"}; !slices.Equal(keys, want) {
		t.Errorf("live JSON keys = %v, want %v", keys, want)
	}
	if m["waiting"] != 2.0 || m["admitted"] != 1.0 || m["live_tokens"] != 1.0 || m["sold"] != 0.0 || m["revenue"] != 0.0 || m["currency"] != "KRW" {
		t.Errorf("live JSON = %v", m)
	}
	if grades, _ := m["grades"].([]any); len(grades) == 0 || fmt.Sprint(slices.Sorted(maps.Keys(grades[0].(map[string]any)))) != "[blocked code free held sold]" {
		t.Errorf("live JSON grades = %v", m["grades"])
	}

	// Pause, set the rate, resume.
	resp = admin.do("POST", admission, url.Values{"paused": {"true"}})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != live {
		t.Errorf("admission change redirects to %q, want %s", loc, live)
	}
	d = doc(t, admin.do("GET", live, nil))
	if testid(d, "live-status") != "paused" || testid(d, "resume") == "" {
		t.Errorf("after pausing the page shows %q and no resume button", testid(d, "live-status"))
	}
	resp = admin.do("POST", admission, url.Values{"rate": {"7"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if m := decode(t, resp); m["rate"] != 7.0 || m["paused"] != true {
		t.Errorf("rate change answer = %v, want rate 7, still paused", m)
	}
	wantStatus(t, admin.do("POST", admission, url.Values{"paused": {"false"}, "rate": {"2"}}), http.StatusSeeOther)
	stored, err := app.Srv.Events.FindEventByID(context.Background(), ev.ID)
	if err != nil || stored.Paused || stored.AdmissionRate != 2 {
		t.Errorf("stored admission = %+v, %v; want running at 2", stored, err)
	}

	// Refusals: 422 with the reasons, nothing changed.
	for _, form := range []url.Values{{"rate": {"fast"}}, {"rate": {"0"}}, {"paused": {"maybe"}}, {}} {
		resp := admin.do("POST", admission, form)
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		d := doc(t, resp)
		if testid(d, "form-error") == "" || testid(d, "error-rate")+testid(d, "error-paused") == "" {
			t.Errorf("refused %v: no reasons shown", form)
		}
		if v, _ := d.Find(`[data-testid="rate-input"]`).Attr("value"); v != form.Get("rate") {
			t.Errorf("refused %v: the rate field shows %q, want what was typed", form, v)
		}
	}
	resp = admin.do("POST", admission, url.Values{"rate": {"-3"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	if m := decode(t, resp); m["error"] != "invalid" || m["fields"].(map[string]any)["rate"] == nil {
		t.Errorf("JSON refusal = %v, want invalid with fields.rate", m)
	}
	if stored, err = app.Srv.Events.FindEventByID(context.Background(), ev.ID); err != nil || stored.Paused || stored.AdmissionRate != 2 {
		t.Errorf("after refusals the admission is %+v, %v; want it unchanged", stored, err)
	}
	wantStatus(t, admin.do("GET", "/admin/events/999999/live", nil), http.StatusNotFound)
}

// The live page lists the grades in the event's order (dearest first, as
// the event's page does), not by code, and groups the digits of its
// figures as the page's language does; the JSON is unchanged but for the
// grades' order.
func TestAdminLive_GradeOrderAndDigits(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ctx := context.Background()
	seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{
		{Name: "A", Rows: 10, SeatsPerRow: 110, Grade: "A"}, {Name: "V", Rows: 1, SeatsPerRow: 10, Grade: "VIP"},
	})
	if err != nil {
		t.Fatal(err)
	}
	venue, err := (&store.Venues{DB: app.DB}).CreateVenue(ctx, "Arena", seats)
	if err != nil {
		t.Fatal(err)
	}
	in := boxoffice.NewEventInput()
	in.VenueID, in.Title = venue.ID, boxoffice.Text{"en": "Big Night"}
	in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = time.Now().Add(-time.Hour).Truncate(time.Second), time.Now().Add(time.Hour).Truncate(time.Second), time.Now().Add(2*time.Hour).Truncate(time.Second)
	in.AdmissionRate = 1500
	in.Grades = []boxoffice.Grade{{Code: "A", Name: boxoffice.Text{"en": "A seat"}, Price: 50000}, {Code: "VIP", Name: boxoffice.Text{"en": "VIP seat"}, Price: 300000}}
	ev, err := app.Srv.Events.CreateEvent(ctx, in)
	if err != nil {
		t.Fatalf("create event: %v %v", err, boxoffice.ErrorProblems(err))
	}
	if _, err := app.Srv.Events.PublishEvent(ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	admin := app.newAdmin(t)
	live := fmt.Sprintf("/admin/events/%d/live", ev.ID)
	for _, lang := range []string{"en", "ko"} {
		d := doc(t, admin.do("GET", live, nil, "Accept-Language: "+lang))
		if got, want := testid(d, "live-free"), "1,110"; got != want {
			t.Errorf("%s: free %q, want %q", lang, got, want)
		}
		if got, want := testid(d, "live-rate"), "1,500/s"; got != want {
			t.Errorf("%s: rate %q, want %q", lang, got, want)
		}
		var rows []string
		d.Find(`[data-testid="live-grades"] tbody tr`).Each(func(_ int, s *goquery.Selection) {
			rows = append(rows, strings.Join(s.Children().Map(func(_ int, c *goquery.Selection) string { return c.Text() }), " "))
		})
		if want := []string{"VIP 0 0 10 0", "A 0 0 1,100 0"}; !slices.Equal(rows, want) {
			t.Errorf("%s: grade rows %q, want %q (the event's order, digits grouped)", lang, rows, want)
		}
	}
	m := decode(t, admin.do("GET", live, nil, "Accept: application/json"))
	grades, _ := m["grades"].([]any)
	if len(grades) != 2 || grades[0].(map[string]any)["code"] != "VIP" || grades[1].(map[string]any)["free"] != 1100.0 {
		t.Errorf("live JSON grades = %v, want VIP then A with 1100 free", m["grades"])
	}
}

// A join right after the admin pauses admission already says paused, and
// one right after the admin resumes it no longer does: the pause reaches
// the waiting room at once, not at the next admission tick (none runs here).
func TestAdminAdmission_PauseReachesJoinsAtOnce(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	admin := app.newAdmin(t)
	admission, join := fmt.Sprintf("/admin/events/%d/admission", ev.ID), fmt.Sprintf("/events/%d/queue", ev.ID)
	first, _ := app.newAccount(t, "first@example.com", boxoffice.RoleFan)
	wantStatus(t, first.do("POST", join, url.Values{}, "Accept: application/json"), http.StatusOK) // the instance keeps the figures
	for i, paused := range []bool{true, false, true} {
		wantStatus(t, admin.do("POST", admission, url.Values{"paused": {strconv.FormatBool(paused)}}), http.StatusSeeOther)
		fan, _ := app.newAccount(t, fmt.Sprintf("fan%d@example.com", i), boxoffice.RoleFan)
		resp := fan.do("POST", join, url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		if m := decode(t, resp); m["paused"] != paused {
			t.Errorf("join after setting paused=%v answers %v", paused, m)
		}
		resp = first.do("GET", join+"/status", nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		if m := decode(t, resp); m["paused"] != paused {
			t.Errorf("a waiting fan's status after setting paused=%v answers %v", paused, m)
		}
	}
}
