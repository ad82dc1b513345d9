package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An event in America/New_York: a start in the hour the spring-forward
// skips is refused naming the nearest valid times, one in the hour the
// fall-back repeats is asked which (both offsets offered, every other field
// kept), and the chosen one is saved; the edit form keeps the choice.
func TestAdminEvents_DaylightSaving(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	v := adminVenue(t, app, "Hall")
	form := formValues(t, doc(t, admin.do("GET", fmt.Sprintf("/admin/events/new?venue_id=%d", v.ID), nil)), `[data-testid="event-form"]`)
	form.Set("title.en", "Night of the clocks")
	form.Set("time_zone", "America/New_York")
	form.Set("queue_opens_at", "2030-02-01T10:00")
	form.Set("sale_ends_at", "2030-03-01T10:00")
	form.Set("grades[0].price", "15000")
	form.Set("grades[1].price", "9000")
	form.Set("action", "save")

	// 2030-03-10: New York skips from 02:00 EST to 03:00 EDT.
	form.Set("starts_at", "2030-03-10T02:30")
	resp := admin.do("POST", "/admin/events", form)
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	d := doc(t, resp)
	want := "2030-03-10 02:30 does not exist in America/New_York: the clocks skip it for daylight saving time. " +
		"The nearest valid times are Sun 10 Mar 2030, 01:59 EST (UTC-05:00) and Sun 10 Mar 2030, 03:00 EDT (UTC-04:00)."
	if got := testid(d, "error-starts_at"); got != want {
		t.Errorf("gap: %q\nwant %q", got, want)
	}
	if got := d.Find(`input[name="title.en"]`).AttrOr("value", ""); got != "Night of the clocks" {
		t.Errorf("title %q, want the typed one kept", got)
	}
	resp = admin.do("POST", "/admin/events", form, "Accept-Language: ko")
	if got := testid(doc(t, resp), "error-starts_at"); !strings.Contains(got, "America/New_York에는 2030-03-10 02:30이(가) 없습니다.") || !strings.Contains(got, "(UTC-04:00)") {
		t.Errorf("gap in Korean: %q", got)
	}

	// 2030-11-03: 01:00-02:00 happens twice, EDT then EST.
	form.Set("starts_at", "2030-11-03T01:30")
	form.Set("sale_ends_at", "2030-11-01T10:00")
	resp = admin.do("POST", "/admin/events", form)
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	d = doc(t, resp)
	if got := testid(d, "error-starts_at"); !strings.Contains(got, "happens twice in America/New_York") || !strings.Contains(got, "(UTC-04:00)") || !strings.Contains(got, "(UTC-05:00)") {
		t.Errorf("twice: %q", got)
	}
	choice := d.Find(`[data-testid="time-choice-starts_at"] input[type="radio"][name="starts_at_offset"]`)
	if choice.Length() != 2 || choice.First().AttrOr("value", "") != "-04:00" || choice.Last().AttrOr("value", "") != "-05:00" ||
		!strings.Contains(d.Find(`[data-testid="time-choice-starts_at"]`).Text(), "01:30 EST, UTC-05:00") {
		t.Fatalf("%d choices (%q), want -04:00 and -05:00 named with their offsets", choice.Length(), d.Find(`[data-testid="time-choice-starts_at"]`).Text())
	}
	again := formValues(t, d, `[data-testid="event-form"]`)
	if again.Get("title.en") != "Night of the clocks" || again.Get("grades[0].price") != "15000" {
		t.Errorf("the asking form lost what was typed: %v", again)
	}
	again.Set("starts_at_offset", "-05:00")
	again.Set("action", "save")
	loc := wantRedirect(t, admin.do("POST", "/admin/events", again), "/admin/events/")
	var id int64
	fmt.Sscanf(loc, "/admin/events/%d/edit", &id)
	e, err := app.Srv.Events.FindEventByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2030, 11, 3, 6, 30, 0, 0, time.UTC); !e.StartsAt.Equal(want) {
		t.Errorf("starts at %s, want %s (the second 01:30, EST)", e.StartsAt, want)
	}
	edit := doc(t, admin.do("GET", loc, nil))
	if got := edit.Find(`input[name="starts_at_offset"][checked]`).AttrOr("value", ""); got != "-05:00" {
		t.Errorf("the edit form checks %q, want the saved -05:00", got)
	}
}
