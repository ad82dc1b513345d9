package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
)

// adminVenue creates a venue with section A of 2×3 R seats and section B of
// 1×4 S seats.
func adminVenue(t *testing.T, app *testApp, name string) *boxoffice.Venue {
	t.Helper()
	v, err := app.Srv.Venues.CreateVenue(context.Background(), name, generate(t,
		boxoffice.SectionSpec{Name: "A", Rows: 2, SeatsPerRow: 3, Grade: "R"},
		boxoffice.SectionSpec{Name: "B", Rows: 1, SeatsPerRow: 4, Grade: "S"}))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// adminEvent creates a draft event at the venue through the store, in
// Asia/Seoul with grades R (150,000) and S (90,000), its times on whole
// seconds that a datetime-local input does not show, so that a form which
// dropped them would move them.
func adminEvent(t *testing.T, app *testApp, venueID int64, title string) *boxoffice.Event {
	t.Helper()
	in := boxoffice.NewEventInput()
	in.VenueID, in.Title = venueID, boxoffice.Text{"en": title}
	in.QueueOpensAt = time.Date(2030, 12, 1, 1, 0, 30, 0, time.UTC)
	in.SaleEndsAt = time.Date(2030, 12, 20, 14, 59, 45, 0, time.UTC)
	in.StartsAt = time.Date(2030, 12, 24, 10, 30, 15, 0, time.UTC)
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": "R seat"}, Price: 150000, Color: "#c0392b"}, {Code: "S", Name: boxoffice.Text{"en": "S seat"}, Price: 90000, Color: "#e67e22"}}
	e, err := app.Srv.Events.CreateEvent(context.Background(), in)
	if err != nil {
		t.Fatalf("create event: %v", err)
	}
	return e
}

// gradeRowValue returns the value of a grade row's field in the form.
func gradeRowValue(d *goquery.Document, i int, field string) string {
	return d.Find(fmt.Sprintf(`input[name="grades[%d].%s"]`, i, field)).AttrOr("value", "")
}

func TestAdminEvents_Create(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	v := adminVenue(t, app, "Hall")

	t.Run("Defaults", func(t *testing.T) {
		d := doc(t, admin.do("GET", "/admin/events/new", nil))
		f := formValues(t, d, `[data-testid="event-form"]`)
		want := map[string]string{"venue_id": "", "time_zone": "Asia/Seoul", "currency": "KRW", "max_per_account": "5",
			"hold_ttl": "300", "token_ttl": "600", "admission_rate": "100", "max_shoppers": "", "pow_difficulty": "", "grades[0].code": ""}
		for k, w := range want {
			if got := f.Get(k); got != w {
				t.Errorf("new form %s = %q, want %q", k, got, w)
			}
		}
	})

	t.Run("LoadGrades", func(t *testing.T) {
		q := url.Values{"venue_id": {fmt.Sprint(v.ID)}, "title.en": {"Typed"}, "grade_rows": {"3"},
			"grades[0].code": {"S"}, "grades[0].price": {"777"}, "grades[1].code": {"X"}, "grades[1].price": {"1"}}
		resp := admin.do("GET", "/admin/events/new?"+q.Encode(), nil)
		wantStatus(t, resp, http.StatusOK)
		d := doc(t, resp)
		if got := d.Find(`input[name="title.en"]`).AttrOr("value", ""); got != "Typed" {
			t.Errorf("title %q, want the typed one kept", got)
		}
		got := []string{gradeRowValue(d, 0, "code") + "=" + gradeRowValue(d, 0, "price"), gradeRowValue(d, 1, "code") + "=" + gradeRowValue(d, 1, "price"), gradeRowValue(d, 2, "code")}
		if want := []string{"R=", "S=777", ""}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("grade rows %q, want %q: one per venue grade, typed prices kept", got, want)
		}
		if c := gradeRowValue(d, 0, "color"); c == gradeRowValue(d, 2, "color") || c == "" {
			t.Errorf("R's colour %q, want the preview palette's", c)
		}
		if sel := d.Find(`select[name="venue_id"] option[selected]`).AttrOr("value", ""); sel != fmt.Sprint(v.ID) {
			t.Errorf("selected venue %q, want %d", sel, v.ID)
		}
	})

	t.Run("AddGrade", func(t *testing.T) {
		resp := admin.do("POST", "/admin/events", url.Values{"action": {"add_grade"}, "grade_rows": {"3"}, "title.en": {"Kept"}, "grades[0].code": {"R"}})
		wantStatus(t, resp, http.StatusOK)
		d := doc(t, resp)
		if n := d.Find(`[data-testid="grade-row"]`).Length(); n != 4 {
			t.Errorf("%d grade rows after adding one to 3, want 4", n)
		}
		if gradeRowValue(d, 0, "code") != "R" || d.Find(`input[name="title.en"]`).AttrOr("value", "") != "Kept" {
			t.Error("adding a grade lost what was typed")
		}
	})

	t.Run("OK", func(t *testing.T) {
		d := doc(t, admin.do("GET", fmt.Sprintf("/admin/events/new?venue_id=%d", v.ID), nil))
		f := formValues(t, d, `[data-testid="event-form"]`)
		f.Set("title.en", "  New Year Concert ")
		f.Set("queue_opens_at", "2030-12-01T20:00")
		f.Set("sale_ends_at", "2030-12-31T18:00")
		f.Set("starts_at", "2030-12-31T22:30")
		f.Set("grades[0].name.en", "Royal")
		f.Set("grades[0].price", "150000")
		f.Set("grades[1].price", "90000")
		f.Set("max_shoppers", "50")
		f.Set("pow_difficulty", "20000")
		f.Set("action", "save")
		loc := wantRedirect(t, admin.do("POST", "/admin/events", f), "/admin/events/")
		var id int64
		fmt.Sscanf(loc, "/admin/events/%d/edit", &id)
		e, err := app.Srv.Events.FindEventByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if e.Title.In("en") != "New Year Concert" || e.Status != boxoffice.EventDraft || e.MaxShoppers != 50 || e.PowDifficulty != 20000 {
			t.Errorf("event %q %s cap %d proof of work %d, want the draft New Year Concert with cap 50 and 20000",
				e.Title, e.Status, e.MaxShoppers, e.PowDifficulty)
		}
		want := []time.Time{time.Date(2030, 12, 1, 11, 0, 0, 0, time.UTC), time.Date(2030, 12, 31, 9, 0, 0, 0, time.UTC), time.Date(2030, 12, 31, 13, 30, 0, 0, time.UTC)}
		if got := []time.Time{e.QueueOpensAt, e.SaleEndsAt, e.StartsAt}; !got[0].Equal(want[0]) || !got[1].Equal(want[1]) || !got[2].Equal(want[2]) {
			t.Errorf("times %v, want %v (the wall clocks in Asia/Seoul)", got, want)
		}
		if len(e.Grades) != 2 || e.Grades[0].Name.In("en") != "Royal" || e.Grades[0].Price != 150000 || e.Grades[0].SeatsTotal != 6 || e.Grades[1].Name.In("en") != "S" || e.Grades[1].SeatsTotal != 4 {
			t.Errorf("grades %+v, want Royal (R) 150000 with 6 seats and S 90000 with 4", e.Grades)
		}
		ed := doc(t, admin.do("GET", loc, nil))
		if testid(ed, "flash") == "" || testid(ed, "event-status") != "Draft" {
			t.Errorf("edit page after create: flash %q, status %q", testid(ed, "flash"), testid(ed, "event-status"))
		}
	})

	tests := []struct {
		name   string
		edit   func(url.Values)
		fields []string // every reason expected, all at once
	}{
		{"ErrEverything", func(f url.Values) {
			f.Set("venue_id", "")
			f.Set("title.en", " ")
			f.Set("starts_at", "2030-12-01T10:00")
			f.Set("queue_opens_at", "2030-12-01T12:00")
			f.Set("sale_ends_at", "2030-12-01T11:00")
			f.Set("currency", "KR")
			f.Set("max_per_account", "50")
			f.Set("hold_ttl", "")
			f.Set("token_ttl", "ten")
			f.Set("admission_rate", "0")
			f.Set("max_shoppers", "-1")
			f.Set("pow_difficulty", "-5")
			f.Set("grades[0].price", "abc")
			f.Set("grades[1].code", "R")
			f.Set("grades[1].color", "red")
		}, []string{"venue_id", "title", "starts_at", "sale_ends_at", "currency", "max_per_account", "hold_ttl", "token_ttl",
			"admission_rate", "max_shoppers", "pow_difficulty", "grades[0].price", "grades[1].code", "grades[1].color"}},
		{"ErrAbsurd", func(f url.Values) {
			f.Set("venue_id", "abc")
			f.Set("hold_ttl", "99999999999999")
			f.Set("token_ttl", "1.5")
			f.Set("starts_at", "0001-01-01T00:00")
			f.Set("grades[0].price", "99999999999999999999")
			f.Set("grades[1].price", "-1")
		}, []string{"venue_id", "hold_ttl", "token_ttl", "starts_at", "grades[0].price", "grades[1].price"}},
		{"ErrUnknownZone", func(f url.Values) { f.Set("time_zone", "Mars/Olympus") }, []string{"time_zone"}},
		{"ErrMalformedTime", func(f url.Values) { f.Set("queue_opens_at", "tomorrow") }, []string{"queue_opens_at"}},
		{"ErrMissingGrade", func(f url.Values) {
			f.Set("grades[1].code", "")
			f.Set("grades[1].name.en", "")
			f.Set("grades[1].price", "")
		}, []string{"grades"}},
		{"ErrNoSuchVenue", func(f url.Values) { f.Set("venue_id", "999999") }, []string{"venue_id"}},
		// A real currency the PG does not take (the sandbox, like Toss, takes KRW).
		{"ErrCurrencyThePGRefuses", func(f url.Values) { f.Set("currency", "USD") }, []string{"currency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := doc(t, admin.do("GET", fmt.Sprintf("/admin/events/new?venue_id=%d", v.ID), nil))
			f := formValues(t, d, `[data-testid="event-form"]`)
			f.Set("title.en", "Refused")
			f.Set("queue_opens_at", "2030-12-01T20:00")
			f.Set("sale_ends_at", "2030-12-31T18:00")
			f.Set("starts_at", "2030-12-31T22:30")
			f.Set("grades[0].price", "150000")
			f.Set("grades[1].price", "90000")
			tt.edit(f)
			events, grades := app.count(t, "event"), app.count(t, "grade")
			resp := admin.do("POST", "/admin/events", f)
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			rd := doc(t, resp)
			for _, k := range tt.fields {
				if testid(rd, "error-"+k) == "" {
					t.Errorf("no reason shown for %s", k)
				}
			}
			if n := rd.Find(`[data-testid^="error-"]`).Length(); n != len(tt.fields) {
				var shown []string
				rd.Find(`[data-testid^="error-"]`).Each(func(_ int, s *goquery.Selection) { shown = append(shown, s.AttrOr("data-testid", "")) })
				t.Errorf("reasons shown for %q, want exactly %q", shown, tt.fields)
			}
			if got := rd.Find(`input[name="title.en"]`).AttrOr("value", ""); got != f.Get("title.en") {
				t.Errorf("title field %q, want the typed %q", got, f.Get("title.en"))
			}
			if app.count(t, "event") != events || app.count(t, "grade") != grades {
				t.Error("a refused event wrote rows")
			}
		})
	}
}

// saveUnchanged loads the event's edit form, posts it back as a browser
// would without changing anything, and returns the event as saved.
func saveUnchanged(t *testing.T, app *testApp, admin *client, id int64) *boxoffice.Event {
	t.Helper()
	path := fmt.Sprintf("/admin/events/%d/edit", id)
	f := formValues(t, doc(t, admin.do("GET", path, nil)), `[data-testid="event-form"]`)
	f.Set("action", "save")
	wantRedirect(t, admin.do("POST", path, f), path)
	e, err := app.Srv.Events.FindEventByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A datetime-local value carries no zone, so the browser's own zone plays no
// part: the server reads every time in the event's zone, and a time whose
// wall clock did not change keeps its instant, seconds and DST fold included.
func TestAdminEvents_TimeZoneRoundTrip(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	v := adminVenue(t, app, "Hall")

	check := func(t *testing.T, e *boxoffice.Event) {
		for round := 1; round <= 3; round++ {
			got := saveUnchanged(t, app, admin, e.ID)
			for _, p := range []struct {
				name      string
				got, want time.Time
			}{{"starts", got.StartsAt, e.StartsAt}, {"queue opens", got.QueueOpensAt, e.QueueOpensAt}, {"sale ends", got.SaleEndsAt, e.SaleEndsAt}} {
				if !p.got.Equal(p.want) {
					t.Errorf("save %d: %s moved from %v to %v", round, p.name, p.want, p.got)
				}
			}
			if got.TimeZone != e.TimeZone {
				t.Errorf("save %d: zone %q, want %q", round, got.TimeZone, e.TimeZone)
			}
		}
	}

	t.Run("Seoul", func(t *testing.T) {
		e := adminEvent(t, app, v.ID, "Seoul")
		f := formValues(t, doc(t, admin.do("GET", fmt.Sprintf("/admin/events/%d/edit", e.ID), nil)), `[data-testid="event-form"]`)
		if got := f.Get("queue_opens_at"); got != "2030-12-01T10:00" {
			t.Errorf("queue opens shown as %q, want Seoul's wall clock 2030-12-01T10:00", got)
		}
		check(t, e)
	})

	t.Run("BerlinDST", func(t *testing.T) {
		in := adminEvent(t, app, v.ID, "Berlin").Input()
		in.TimeZone = "Europe/Berlin"
		in.QueueOpensAt = time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC) // 03:00 CEST, just after the spring gap
		in.StartsAt = time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)   // the first 02:30 (CEST) of the autumn fold
		in.SaleEndsAt = time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC) // the second 02:30 (CET)
		e, err := app.Srv.Events.CreateEvent(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		f := formValues(t, doc(t, admin.do("GET", fmt.Sprintf("/admin/events/%d/edit", e.ID), nil)), `[data-testid="event-form"]`)
		if f.Get("starts_at") != "2026-10-25T02:30" || f.Get("sale_ends_at") != "2026-10-25T02:30" || f.Get("queue_opens_at") != "2026-03-29T03:00" {
			t.Errorf("form shows starts %q, sale ends %q, queue opens %q; want Berlin's wall clocks", f.Get("starts_at"), f.Get("sale_ends_at"), f.Get("queue_opens_at"))
		}
		check(t, e)

		// A sale opening at 02:30 on the spring-forward day, a wall clock
		// that does not exist, is refused and nothing moves.
		path := fmt.Sprintf("/admin/events/%d/edit", e.ID)
		f.Set("queue_opens_at", "2026-03-29T02:30")
		f.Set("action", "save")
		resp := admin.do("POST", path, f)
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		if got := testid(doc(t, resp), "error-queue_opens_at"); !strings.Contains(got, "does not exist in Europe/Berlin") {
			t.Errorf("the gap's reason: %q", got)
		}
		check(t, e)
	})
}

// sell records seat label of the event as sold to the account, as a
// confirmed order would, with raw SQL.
func sell(t *testing.T, app *testApp, eventID, accountID int64, label string, price int64) {
	t.Helper()
	ctx := context.Background()
	orderID := fmt.Sprintf("order-%d-%s", eventID, label)
	_, err := app.DB.Pool.Exec(ctx, `
		INSERT INTO orders (id, event_id, account_id, status, amount, currency, order_name, expires_at, confirmed_at)
		VALUES ($1, $2, $3, 'CONFIRMED', $4, 'KRW', 'test order', now() + interval '10 minutes', now())`, orderID, eventID, accountID, price)
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.DB.Pool.Exec(ctx, `
		INSERT INTO sold_seat (event_id, seat_label, order_id, account_id) VALUES ($1, $2, $3, $4)`, eventID, label, orderID, accountID)
	if err != nil {
		t.Fatal(err)
	}
}

func TestAdminEvents_UpdateAfterSale(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	_, fan := app.newAccount(t, "buyer@example.com", boxoffice.RoleFan)
	v := adminVenue(t, app, "Hall")
	other := adminVenue(t, app, "Other hall")
	e := adminEvent(t, app, v.ID, "Sold out soon")
	sell(t, app, e.ID, fan.ID, "A-1-1", 150000)
	path := fmt.Sprintf("/admin/events/%d/edit", e.ID)
	form := func(t *testing.T) url.Values {
		d := doc(t, admin.do("GET", path, nil))
		if got := gradeRowValue(d, 0, "code"); got != "R" {
			t.Fatalf("first grade row %q, want R (dearest first)", got)
		}
		f := formValues(t, d, `[data-testid="event-form"]`)
		f.Set("action", "save")
		return f
	}

	t.Run("ErrSoldPrice", func(t *testing.T) {
		f := form(t)
		f.Set("grades[0].price", "160000")
		f.Set("title.en", "Typed title")
		resp := admin.do("POST", path, f)
		wantStatus(t, resp, http.StatusConflict)
		d := doc(t, resp)
		if got := testid(d, "form-error"); got != "Tickets of grade R are sold, so its price cannot change." {
			t.Errorf("refusal says %q", got)
		}
		if testid(d, "sold-R") == "" {
			t.Error("the R row is not marked as sold")
		}
		if gradeRowValue(d, 0, "price") != "160000" || d.Find(`input[name="title.en"]`).AttrOr("value", "") != "Typed title" {
			t.Error("the refused form lost what was typed")
		}
		got, err := app.Srv.Events.FindEventByID(context.Background(), e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Grade("R").Price != 150000 || got.Title.In("en") != "Sold out soon" {
			t.Errorf("after the refusal R costs %d and the title is %q: want nothing saved", got.Grade("R").Price, got.Title)
		}
	})

	t.Run("ErrVenue", func(t *testing.T) {
		f := form(t)
		f.Set("venue_id", fmt.Sprint(other.ID))
		resp := admin.do("POST", path, f)
		wantStatus(t, resp, http.StatusConflict)
		if got := testid(doc(t, resp), "form-error"); got != "The venue cannot change: the queue of this event has opened, or it has orders or blocked seats." {
			t.Errorf("refusal says %q", got)
		}
	})

	t.Run("UnsoldGradeAndTitle", func(t *testing.T) {
		f := form(t)
		f.Set("grades[1].price", "95000")
		f.Set("grades[0].name.en", "Royal")
		f.Set("title.en", "Renamed")
		wantRedirect(t, admin.do("POST", path, f), path)
		got, err := app.Srv.Events.FindEventByID(context.Background(), e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Grade("S").Price != 95000 || got.Grade("R").Name.In("en") != "Royal" || got.Title.In("en") != "Renamed" {
			t.Errorf("event %q R %+v S %+v, want the title, R's name and S's price saved", got.Title, got.Grade("R"), got.Grade("S"))
		}
		if left := got.Grade("R").SeatsLeft; left != 5 {
			t.Errorf("R seats left %d, want 5 after one sale", left)
		}
	})
}

func TestAdminEvents_PublishClose(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	e := adminEvent(t, app, adminVenue(t, app, "Hall").ID, "Gala")
	edit := fmt.Sprintf("/admin/events/%d/edit", e.ID)

	if got := testid(doc(t, admin.do("GET", "/admin/events", nil)), "event-status"); got != "Draft" {
		t.Errorf("list shows status %q, want Draft", got)
	}
	wantRedirect(t, admin.do("POST", fmt.Sprintf("/admin/events/%d/publish", e.ID), url.Values{"next": {"/admin/events"}}), "/admin/events")
	d := doc(t, admin.do("GET", "/admin/events", nil))
	if testid(d, "event-status") != "On sale" || testid(d, "flash") == "" {
		t.Errorf("after publishing the list shows %q (flash %q), want On sale", testid(d, "event-status"), testid(d, "flash"))
	}

	resp := admin.do("POST", fmt.Sprintf("/admin/events/%d/publish", e.ID), url.Values{})
	wantStatus(t, resp, http.StatusConflict)
	if got := testid(doc(t, resp), "form-error"); got != "The event is on sale already." {
		t.Errorf("publishing twice says %q", got)
	}

	if loc := wantRedirect(t, admin.do("POST", fmt.Sprintf("/admin/events/%d/close", e.ID), url.Values{"next": {"https://evil.example/"}}), "/"); loc != "/" {
		t.Errorf("close with a next off the site goes to %q, want /", loc)
	}
	got, err := app.Srv.Events.FindEventByID(context.Background(), e.ID)
	if err != nil || got.Status != boxoffice.EventClosed {
		t.Fatalf("after close: %+v, %v", got, err)
	}
	d = doc(t, admin.do("GET", edit, nil))
	if testid(d, "event-status") != "Closed" || d.Find(`[data-testid="publish"], [data-testid="close"]`).Length() != 0 {
		t.Error("a closed event's page offers publish or close")
	}
	wantStatus(t, admin.do("POST", "/admin/events/999999/close", url.Values{}), http.StatusNotFound)
	wantStatus(t, admin.do("GET", "/admin/events/abc/edit", nil), http.StatusNotFound)
}
