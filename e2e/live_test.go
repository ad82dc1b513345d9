package e2e

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

// waitFigure waits until the live page's figure id reads want (the page
// polls its figures every second).
func waitFigure(t *testing.T, page playwright.Page, id string, want int) {
	t.Helper()
	_, err := page.WaitForFunction(`([id, want]) => document.querySelector('[data-testid="' + id + '"]')?.textContent.trim().replaceAll(",", "") === want`,
		[]any{id, strconv.Itoa(want)})
	must(t, fmt.Sprintf("wait for %s to read %d", id, want), err)
}

// figure reads a number of the live page (its digits grouped: "2,523").
func figure(t *testing.T, page playwright.Page, id string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(text(t, page, id), ",", ""))
	must(t, "read "+id, err)
	return n
}

// korean switches the page's browser to Korean (the language cookie) and
// reloads it.
func korean(t *testing.T, a *app, page playwright.Page) {
	t.Helper()
	must(t, "set the language cookie", page.Context().AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: "ko", URL: playwright.String(a.URL)}}))
	_, err := page.Reload()
	must(t, "reload in Korean", err)
}

// An admin watches the live page on a phone while a fan holds and buys: the
// held and then the sold seats move on the page without a reload. The
// admin's broadcast then appears, without a reload, on a fan's seat map
// and in another fan's waiting room.
func TestLive_FiguresMoveAndBroadcast(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[concertHall]
	live := fmt.Sprintf("%s/admin/events/%d/live", a.URL, hall)
	admin := login(t, a, "admin@boxoffice.test")
	must(t, "resize", admin.SetViewportSize(390, 844))
	_, err := admin.Goto(live)
	must(t, "open the live page", err)
	sold, held, free := figure(t, admin, "live-sold"), figure(t, admin, "live-held"), figure(t, admin, "live-free")

	buyer := login(t, a, "fan1@boxoffice.test")
	enter(t, a, buyer, hall)
	holdAndCheckOut(t, a, buyer, "1층 C-3-10", "1층 C-3-11")
	waitFigure(t, admin, "live-held", held+2)
	waitFigure(t, admin, "live-free", free-2)
	must(t, "pay", buyer.GetByTestId("pg-pay").Click())
	waitForURL(t, buyer, "wait for the order page", a.URL+"/orders/**")
	waitFigure(t, admin, "live-sold", sold+2)
	waitFigure(t, admin, "live-held", held)
	screenshot(t, admin, "live-figures-en")
	// (The admin pages' header is wider than a phone: that is the layout's.)
	if fits, err := admin.Evaluate(`() => { const a = document.querySelector('[data-testid="admin-live"]'); return a.scrollWidth <= a.clientWidth }`); err != nil || fits != true {
		t.Errorf("the live page's figures overflow their card at 390 px (%v)", err)
	}

	shopper := login(t, a, "fan2@boxoffice.test")
	enter(t, a, shopper, hall)
	must(t, "pause", admin.GetByTestId("pause").Click())
	must(t, "wait for resume", admin.GetByTestId("resume").WaitFor())
	waiting := login(t, a, "fan3@boxoffice.test")
	_, err = waiting.Goto(fmt.Sprintf("%s/events/%d", a.URL, hall))
	must(t, "open the event", err)
	must(t, "join", waiting.GetByTestId("join-queue").Click())
	must(t, "wait for the paused notice", waiting.GetByTestId("queue-paused").WaitFor())

	const message = "Doors open 30 minutes late <b>today</b>"
	must(t, "write the broadcast", admin.GetByTestId("broadcast-input").Fill(message))
	must(t, "send the broadcast", admin.GetByTestId("broadcast-send").Click())
	must(t, "wait for the live page", admin.GetByTestId("broadcast-current").WaitFor())
	for name, page := range map[string]playwright.Page{"seat map": shopper, "waiting room": waiting} {
		must(t, "wait for the broadcast on the "+name, page.GetByTestId("broadcast-message").Filter(playwright.LocatorFilterOptions{HasText: message}).WaitFor())
		if got := text(t, page, "broadcast-message"); got != message {
			t.Errorf("the %s shows %q, want the message as text", name, got)
		}
	}
	must(t, "resize", waiting.SetViewportSize(390, 844))
	screenshot(t, waiting, "live-broadcast-waiting-room-en")
	must(t, "resize", shopper.SetViewportSize(390, 844))
	screenshot(t, shopper, "live-broadcast-seatmap-en")
	screenshot(t, admin, "live-page-en")
	for name, page := range map[string]playwright.Page{"live-page": admin, "live-broadcast-waiting-room": waiting, "live-broadcast-seatmap": shopper} {
		korean(t, a, page)
		if name != "live-page" {
			must(t, "wait for the broadcast in Korean", page.GetByTestId("broadcast-message").Filter(playwright.LocatorFilterOptions{HasText: message}).WaitFor())
		}
		screenshot(t, page, name+"-ko")
	}
	// The list of a section's seats, the way without JavaScript, shows the
	// broadcast too, in both languages.
	section, err := shopper.Evaluate(`async () => (await (await fetch(location.pathname, {headers: {Accept: "application/json"}})).json()).seats[0].section`)
	must(t, "read a section's name", err)
	_, err = shopper.Goto(fmt.Sprintf("%s/events/%d/seats?section=%s", a.URL, hall, url.QueryEscape(fmt.Sprint(section))))
	must(t, "open a section's list", err)
	for _, lang := range []string{"ko", "en"} {
		must(t, "set the language cookie", shopper.Context().AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: lang, URL: playwright.String(a.URL)}}))
		_, err = shopper.Reload()
		must(t, "reload the section's list", err)
		if got := text(t, shopper, "broadcast-message"); got != message {
			t.Errorf("%s: the section's list shows the broadcast %q, want %q", lang, got, message)
		}
		screenshot(t, shopper, "live-broadcast-section-list-"+lang)
	}
}
