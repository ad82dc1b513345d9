package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/boxoffice/boxoffice/views"
	"github.com/mxschmitt/playwright-go"
)

// What fans see follows the seats, at a phone's width in both languages:
// an admin blocks a seat of a four-seat event on its edit page, then the
// event page says it is on sale, all taken (one seat sold, two held: the
// join button stays with a sentence that seats may come back) and sold out
// (no join button) once the holder pays. Screenshots:
// e2e/screenshots/<lang>-event-on-sale, -event-all-taken, -event-sold-out
// and -admin-blocked-seats.
func TestEvent_SeatStatus(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	seedDemo(t, a)
	ctx := context.Background()
	db, err := store.OpenDB(ctx, a.DatabaseURL)
	must(t, "open the app's database", err)
	defer db.Close()
	seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{{Name: "A", Rows: 1, SeatsPerRow: 4, Grade: "R"}})
	must(t, "lay out the seats", err)
	venue, err := (&store.Venues{DB: db}).CreateVenue(ctx, "Small Hall", seats)
	must(t, "create the venue", err)
	in := boxoffice.NewEventInput()
	now := time.Now().UTC().Truncate(time.Minute)
	in.VenueID, in.Title = venue.ID, boxoffice.Text{"en": "Small Night", "ko": "작은 밤"}
	in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = now.Add(-time.Hour), now.Add(24*time.Hour), now.Add(48*time.Hour)
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": "R seat", "ko": "R석"}, Price: 150000}}
	in.Normalize()
	events := &store.Events{DB: db}
	ev, err := events.CreateEvent(ctx, in)
	must(t, "create the event", err)
	_, err = events.PublishEvent(ctx, ev.ID)
	must(t, "publish the event", err)
	id := strconv.FormatInt(ev.ID, 10)

	admin := login(t, a, demo.AdminEmail)
	must(t, "resize", admin.SetViewportSize(390, 844))
	_, err = admin.Goto(a.URL + "/admin/events/" + id + "/edit")
	must(t, "open the event's edit page", err)
	must(t, "name the seat to block", admin.GetByTestId("block-seats").Fill("A-1-1"))
	must(t, "block it", admin.GetByTestId("block-submit").Click())
	must(t, "wait for the blocked seat", admin.GetByTestId("blocked-A-1-1").WaitFor())

	// shoot opens the event page (and the admin's edit page) in each
	// language at 390 px, reloading until the page shows want (the event's
	// copy lives a second), and saves the screenshots.
	shoot := func(state, want string, withAdmin bool) {
		t.Helper()
		for _, lang := range []string{views.English, views.Korean} {
			bctx, page := newPageIn(t, "en-US")
			must(t, "resize", page.SetViewportSize(390, 844))
			must(t, "choose "+lang, bctx.AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: lang, URL: playwright.String(a.URL)}}))
			for {
				_, err := page.Goto(a.URL + "/events/" + id)
				must(t, "open the event", err)
				n, err := page.GetByTestId(want).Count()
				must(t, "look for "+want, err)
				if n > 0 {
					break
				}
				page.WaitForTimeout(200)
			}
			wantLang(t, page, lang)
			if n, err := page.GetByTestId("join-queue").Count(); err != nil || (n == 0) != (state == "sold-out") {
				t.Errorf("%s page in %s: %d join buttons (%v), want one unless sold out", state, lang, n, err)
			}
			screenshot(t, page, lang+"-event-"+state)
			if withAdmin {
				must(t, "choose "+lang, admin.Context().AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: lang, URL: playwright.String(a.URL)}}))
				_, err := admin.Goto(a.URL + "/admin/events/" + id + "/edit")
				must(t, "open the event's edit page", err)
				must(t, "scroll to the blocked seats", admin.GetByTestId("blocked-list").ScrollIntoViewIfNeeded())
				screenshot(t, admin, lang+"-admin-blocked-seats")
			}
		}
	}
	shoot("on-sale", "join-queue", true)

	buyer := storetest.NewAccount(t, db)
	_, err = db.Pool.Exec(ctx, `
		WITH o AS (
			INSERT INTO orders (id, event_id, account_id, status, amount, currency, order_name, expires_at, confirmed_at)
			VALUES ('e2esoldout01', $1, $2, 'CONFIRMED', 150000, 'KRW', 'Small Night', now() + interval '10 minutes', now())
			RETURNING id)
		INSERT INTO sold_seat (event_id, seat_label, order_id, account_id) SELECT $1, 'A-1-2', o.id, $2 FROM o`, ev.ID, buyer)
	must(t, "sell A-1-2", err)

	fan := login(t, a, "fan1@boxoffice.test")
	enter(t, a, fan, ev.ID)
	for _, l := range []string{"A-1-3", "A-1-4"} {
		must(t, "choose "+l, seat(fan, l).Click())
	}
	must(t, "hold", fan.GetByTestId("hold-submit").Click())
	must(t, "wait for the held seats", fan.Locator(`[data-testid=held-seats] li`).Nth(1).WaitFor())
	shoot("all-taken", "all-taken", false)

	must(t, "check out", fan.GetByTestId("checkout").Click())
	waitForURL(t, fan, "wait for the PG's page", a.URL+"/sandbox-pg/checkout?**")
	must(t, "pay", fan.GetByTestId("pg-pay").Click())
	waitForURL(t, fan, "wait for the order page", a.URL+"/orders/**")
	must(t, "wait for the tickets", fan.GetByTestId("ticket").Nth(1).WaitFor())
	shoot("sold-out", "sold-out", false)
}
