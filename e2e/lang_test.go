package e2e

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/views"
	"github.com/mxschmitt/playwright-go"
)

// ko returns a sentence of the Korean catalog.
func ko(id boxoffice.MsgID, args ...any) string {
	return views.In(views.Korean, boxoffice.M(id, args...))
}

// newPageIn opens a page in a fresh browser context whose browser speaks
// locale (its Accept-Language), closed when t ends.
func newPageIn(t *testing.T, locale string) (playwright.BrowserContext, playwright.Page) {
	t.Helper()
	bctx, err := browser.NewContext(playwright.BrowserNewContextOptions{Locale: playwright.String(locale)})
	must(t, "open a browser context", err)
	t.Cleanup(func() { bctx.Close() })
	page, err := bctx.NewPage()
	must(t, "open a page", err)
	page.SetDefaultTimeout(10000)
	logErrors(t, page)
	return bctx, page
}

// wantLang fails unless the page is in lang (<html lang>).
func wantLang(t *testing.T, page playwright.Page, lang string) {
	t.Helper()
	got, err := page.Locator("html").GetAttribute("lang")
	must(t, "read <html lang>", err)
	if got != lang {
		t.Fatalf("%s is in %q, want %q", page.URL(), got, lang)
	}
}

// The whole fan journey in Korean, as a browser set to Korean sees it:
// sign-up, the event, the queue, the seat map, the sandbox PG, the tickets
// and the order list; then the switch to English on the same pages, and
// each page at a phone's width in both languages. Screenshots of every
// step land in e2e/screenshots/ (ko-*, en-*).
func TestJourney_Korean(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[demo.HallName]
	bctx, page := newPageIn(t, "ko-KR")

	_, err := page.Goto(a.URL + "/")
	must(t, "open home", err)
	wantLang(t, page, views.Korean)
	if got := text(t, page, "event-link"); !strings.Contains(got, "(데모)") {
		t.Errorf("the home page lists %q, want the events' Korean titles", got)
	}
	screenshot(t, page, "ko-home")

	must(t, "open sign-up", page.GetByTestId("nav-signup").Click())
	must(t, "fill name", page.GetByLabel(ko("field_name")).Fill("김팬"))
	must(t, "fill e-mail", page.GetByLabel(ko("field_email")).Fill("kim@example.com"))
	must(t, "fill a short password", page.GetByLabel(ko("field_password_new", "Min", boxoffice.MinPasswordLen)).Fill("short"))
	_, err = page.Locator("form[data-testid=signup-form]").Evaluate(`f => f.noValidate = true`, nil)
	must(t, "let the server check the form", err)
	must(t, "sign up", page.GetByTestId("signup-submit").Click())
	if got := text(t, page, "error-password"); got != ko("val_password_short", "Min", boxoffice.MinPasswordLen) {
		t.Errorf("a short password is refused with %q, want the Korean reason", got)
	}
	screenshot(t, page, "ko-signup-refused")
	must(t, "fill password", page.GetByLabel(ko("field_password_new", "Min", boxoffice.MinPasswordLen)).Fill("correct horse"))
	must(t, "sign up", page.GetByTestId("signup-submit").Click())
	waitForURL(t, page, "wait for home", a.URL+"/")
	if got := text(t, page, "nav-account"); got != "김팬" {
		t.Fatalf("after sign-up the nav shows %q, want 김팬", got)
	}

	_, err = page.Goto(a.URL + "/events/" + itoa(hall))
	must(t, "open the event", err)
	for id, want := range map[string]string{"event-title": "겨울 교향곡 갈라 (데모)", "price-R": "150,000원", "grade-R": "R석 (R)"} {
		if got := text(t, page, id); !strings.Contains(got, want) {
			t.Errorf("event page %s = %q, want %q", id, got, want)
		}
	}
	if got := text(t, page, "event-starts"); !strings.Contains(got, "년") || !strings.Contains(got, "오후 7:00") {
		t.Errorf("the event starts %q, want a Korean date at 오후 7:00", got)
	}
	screenshot(t, page, "ko-event")

	must(t, "join the queue", page.GetByTestId("join-queue").Click())
	waitForURL(t, page, "wait for the seat map", a.URL+"/events/"+itoa(hall)+"/seats")
	waitSeatMap(t, page)
	wantLang(t, page, views.Korean)
	labels := []string{"1층 C-3-10", "1층 C-3-11"}
	for _, l := range labels {
		must(t, "choose "+l, seat(page, l).Click())
	}
	if got := text(t, page, "selection"); !strings.Contains(got, "1층 C구역 3열 10번") {
		t.Errorf("the selection reads %q, want 1층 C구역 3열 10번", got)
	}
	must(t, "hold", page.GetByTestId("hold-submit").Click())
	must(t, "wait for the held seats", page.Locator(`[data-testid=held-seats] li`).Nth(1).WaitFor())
	if got := text(t, page, "hold-notice"); !strings.HasPrefix(got, "좌석 2석을") {
		t.Errorf("the hold notice reads %q, want the Korean sentence", got)
	}
	if got := text(t, page, "hold-countdown"); !strings.Contains(got, "분") {
		t.Errorf("the countdown reads %q, want minutes in Korean", got)
	}
	screenshot(t, page, "ko-seatmap")
	// The seat map in every language while the fan holds seats: once the
	// order is paid the fan's turn ends (no seat left held), and the seat
	// map sends them to the waiting room.
	seatMapURL := page.URL()
	everyLanguage(t, a, bctx, page, map[string]string{"seatmap": seatMapURL,
		"seat-section": seatMapURL + "?section=" + url.QueryEscape("1층 C") + "#pick"})
	_, err = page.Goto(seatMapURL)
	must(t, "open the seat map again", err)
	waitSeatMap(t, page)

	must(t, "check out", page.GetByTestId("checkout").Click())
	waitForURL(t, page, "wait for the PG's page", a.URL+"/sandbox-pg/checkout?**")
	wantLang(t, page, views.Korean)
	if got := text(t, page, "pg-pay"); !strings.HasSuffix(got, "원 결제하기") {
		t.Errorf("the pay button reads %q, want the amount in won and 결제하기", got)
	}
	screenshot(t, page, "ko-sandbox-pg")
	must(t, "pay", page.GetByTestId("pg-pay").Click())
	waitForURL(t, page, "wait for the order page", a.URL+"/orders/**")
	must(t, "wait for the tickets", page.GetByTestId("ticket").Nth(1).WaitFor())
	if got := text(t, page, "order-status"); got != ko("order_status_confirmed") {
		t.Errorf("order-status %q, want %s", got, ko("order_status_confirmed"))
	}
	screenshot(t, page, "ko-order-tickets")
	orderURL := page.URL()

	must(t, "open my orders", page.GetByTestId("my-orders-link").Click())
	must(t, "wait for my orders", page.GetByTestId("orders-row").WaitFor())
	if got := text(t, page, "orders-status"); got != ko("order_status_confirmed") {
		t.Errorf("my orders shows %q, want %s", got, ko("order_status_confirmed"))
	}
	screenshot(t, page, "ko-my-orders")

	// The switch: English on the same page, kept for the next pages.
	must(t, "switch to English", page.GetByTestId("lang-en").Click())
	must(t, "wait for English", page.Locator(`html[lang=en]`).WaitFor(playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateAttached}))
	if !strings.HasSuffix(page.URL(), "/me/orders") {
		t.Errorf("the switch left %s, want the same page", page.URL())
	}
	if got := text(t, page, "orders-status"); got != "Confirmed" {
		t.Errorf("in English my orders shows %q, want Confirmed", got)
	}
	_, err = page.Goto(orderURL)
	must(t, "open the order", err)
	wantLang(t, page, views.English)

	// The admin's pages in Korean: the event form with a field per
	// language, the dashboard and the live page.
	adminCtx, admin := newPageIn(t, "ko-KR")
	_, err = admin.Goto(a.URL + "/login")
	must(t, "open log-in", err)
	must(t, "fill e-mail", admin.GetByLabel(ko("field_email")).Fill("admin@boxoffice.test"))
	must(t, "fill password", admin.GetByLabel(ko("field_password")).Fill(demoPassword))
	must(t, "log in", admin.GetByTestId("login-submit").Click())
	waitForURL(t, admin, "wait for home", a.URL+"/")
	for name, path := range map[string]string{"admin": "/admin", "admin-event": "/admin/events/" + itoa(hall) + "/edit", "admin-live": "/admin/events/" + itoa(hall) + "/live"} {
		_, err := admin.Goto(a.URL + path)
		must(t, "open "+name, err)
		wantLang(t, admin, views.Korean)
		if name == "admin-event" {
			if got, err := admin.GetByTestId("title.ko").InputValue(); err != nil || got != "겨울 교향곡 갈라 (데모)" {
				t.Errorf("the event form's Korean title holds %q (%v), want the demo's", got, err)
			}
		}
		screenshot(t, admin, "ko-"+name)
	}
	// The order desk, the audit log, and the event form asking which of a
	// time that happens twice (New York falls back on 2030-11-03).
	everyLanguage(t, a, adminCtx, admin, map[string]string{
		"admin-orders": a.URL + "/admin/orders", "admin-audit": a.URL + "/admin/audit",
		"admin-event-twice": a.URL + "/admin/events/new?time_zone=America/New_York&starts_at=2030-11-03T01:30",
	})

	// The other pages of the journey in both languages, on a desktop and at
	// a phone's width.
	everyLanguage(t, a, bctx, page, map[string]string{"home": a.URL + "/", "event": a.URL + "/events/" + itoa(hall),
		"order": orderURL, "my-orders": a.URL + "/me/orders", "login": a.URL + "/login"})
}

// everyLanguage opens each page (name: URL) in every language, on a desktop
// and at a phone's width, and saves a screenshot of each as
// <lang>-<name>[-phone]; it leaves the page in Korean at its first size.
func everyLanguage(t *testing.T, a *app, bctx playwright.BrowserContext, page playwright.Page, pages map[string]string) {
	t.Helper()
	choose := func(lang string) {
		must(t, "choose "+lang, bctx.AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: lang, URL: playwright.String(a.URL)}}))
	}
	size := page.ViewportSize()
	for _, lang := range views.Langs {
		choose(lang)
		for _, size := range []struct {
			name          string
			width, height int
		}{{"", 1280, 800}, {"-phone", 390, 844}} {
			must(t, "resize", page.SetViewportSize(size.width, size.height))
			for name, u := range pages {
				// From the same URL with a #fragment, Goto would only
				// scroll, not load the page in the new language.
				_, err := page.Goto("about:blank")
				must(t, "leave "+page.URL(), err)
				_, err = page.Goto(u)
				must(t, "open "+name, err)
				wantLang(t, page, lang)
				if name == "seatmap" {
					waitSeatMap(t, page)
				}
				screenshot(t, page, lang+"-"+name+size.name)
			}
		}
	}
	choose(views.Korean)
	must(t, "resize back", page.SetViewportSize(size.Width, size.Height))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
