package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/views"
	"github.com/mxschmitt/playwright-go"
)

// At a phone's width (390 × 844), in English and in Korean, with a header
// on one line, a fan asks for the best two seats of a grade, taps a section
// of the map open (seats 44 px apart) and adds one seat by hand, pays,
// and gets tickets fit for the door: the event, venue and start, each seat
// in words, a QR code per ticket, and a print layout of one ticket a page.
// Screenshots: e2e/screenshots/<lang>-phone-best, -phone-hand,
// -phone-tickets, -tickets-print.
func TestPhone_BestAvailableAndTickets(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[demo.HallName]
	for i, lang := range []string{views.English, views.Korean} {
		t.Run(lang, func(t *testing.T) {
			bctx, page := newPageIn(t, "en-US")
			must(t, "resize", page.SetViewportSize(390, 844))
			logInWithLang(t, a, bctx, page, "fan"+strconv.Itoa(i+1)+"@boxoffice.test", lang)
			enter(t, a, page, hall)
			wantLang(t, page, lang)
			// The header on one line: the brand and the log-out button side
			// by side, within the phone's width.
			brand, err := page.Locator("header nav .brand").BoundingBox()
			must(t, "measure the brand", err)
			logout, err := page.GetByTestId("logout").BoundingBox()
			must(t, "measure the log-out button", err)
			if logout.Y > brand.Y+brand.Height || logout.X+logout.Width > 390 {
				t.Errorf("the log-out button is at %+v, the brand at %+v: want them on one line within 390 px", logout, brand)
			}

			// Best available comes first on the page.
			first, err := page.Locator("main form").First().GetAttribute("data-testid")
			must(t, "read the first form", err)
			if first != "best-form" {
				t.Errorf("the page's first form is %q, want the best-available form", first)
			}
			_, err = page.GetByTestId("best-grade").SelectOption(playwright.SelectOptionValues{Values: &[]string{"R"}})
			must(t, "choose grade R", err)
			_, err = page.GetByTestId("best-quantity").SelectOption(playwright.SelectOptionValues{Values: &[]string{"2"}})
			must(t, "choose 2 seats", err)
			must(t, "ask for the best seats", page.GetByTestId("best-submit").Click())
			held := page.Locator(`[data-testid=held-seats] li`)
			must(t, "wait for the 2 held seats", held.Nth(1).WaitFor())
			best, err := held.EvaluateAll(`items => items.map(li => li.dataset.seat)`)
			must(t, "read the held seats", err)
			if got, _ := best.([]any); len(got) != 2 || !nextTo(fmt.Sprint(got[0]), fmt.Sprint(got[1])) {
				t.Errorf("best available held %v, want 2 seats side by side", best)
			}
			wantBottomBar(t, page, "checkout")
			if got, want := text(t, page, "hold-count"), views.In(lang, boxoffice.M("hold_held_count", "Count", 2, "N", "2")); got != want {
				t.Errorf("the bar counts %q, want %q", got, want)
			}
			screenshot(t, page, lang+"-phone-best")

			// Without JavaScript, the section's list has the same bar, with
			// the held seats and the check-out button.
			plain := phonePageWithoutJS(t, bctx)
			_, err = plain.Goto(a.URL + views.SectionSeatsURL(hall, "1층 C"))
			must(t, "open the section's list", err)
			wantBottomBar(t, plain, "checkout")
			screenshot(t, plain, lang+"-phone-list-nojs")

			// One more seat by hand, from the map: a tap on the section's
			// outline opens it with seats a finger's width (44 px) apart.
			n := strconv.Itoa(10 + 2*i)
			hand := "1층 C-7-" + n
			_, err = page.Locator(`polygon.section-shape[data-section="1층 C"]`).Evaluate(`el => {
				const r = el.getBoundingClientRect();
				el.dispatchEvent(new MouseEvent("click", {bubbles: true, clientX: r.x + r.width / 2, clientY: r.y + r.height / 2}));
			}`, nil)
			must(t, "tap the section", err)
			a1, err := seat(page, "1층 C-7-10").BoundingBox()
			must(t, "measure a seat", err)
			a2, err := seat(page, "1층 C-7-11").BoundingBox()
			must(t, "measure the next seat", err)
			if d := a2.X - a1.X; d < 44 {
				t.Errorf("after a tap on the section its seats are %.0f px apart, want at least 44", d)
			}
			must(t, "choose "+hand, seat(page, hand).Click())
			wantBottomBar(t, page, "hold-submit")
			screenshot(t, page, lang+"-phone-chosen")
			must(t, "hold", page.GetByTestId("hold-submit").Click())
			must(t, "wait for the 3 held seats", held.Nth(2).WaitFor())
			screenshot(t, page, lang+"-phone-hand")

			must(t, "check out", page.GetByTestId("checkout").Click())
			waitForURL(t, page, "wait for the PG's page", a.URL+"/sandbox-pg/checkout?**")
			must(t, "pay", page.GetByTestId("pg-pay").Click())
			waitForURL(t, page, "wait for the order page", a.URL+"/orders/**")
			must(t, "wait for the tickets", page.GetByTestId("ticket").Nth(2).WaitFor())
			words := views.In(lang, boxoffice.M("ticket_seat", "Section", "1층 C", "Row", "7", "Number", n))
			seats, err := page.GetByTestId("ticket-seat").AllTextContents()
			must(t, "read the tickets' seats", err)
			if !strings.Contains(strings.Join(seats, "|"), words) {
				t.Errorf("the tickets say %q, want one for %q", seats, words)
			}
			items, err := page.GetByTestId("order-item-seat").AllTextContents()
			must(t, "read the order's items", err)
			if !strings.Contains(strings.Join(items, "|"), words) {
				t.Errorf("the order's items say %q, want one for %q", items, words)
			}
			grades, err := page.GetByTestId("order-item-grade").AllTextContents()
			must(t, "read the order's grades", err)
			ticketGrades, err := page.GetByTestId("ticket-grade").AllTextContents()
			must(t, "read the tickets' grades", err)
			slices.Sort(grades)
			slices.Sort(ticketGrades)
			if len(grades) != 3 || grades[0] == "R" || !slices.Equal(grades, ticketGrades) {
				t.Errorf("the order's items give the grades %q, want the tickets' grades in words %q", grades, ticketGrades)
			}
			for _, id := range []string{"ticket-event", "ticket-venue", "ticket-time", "ticket-grade"} {
				if got := text(t, page, id); got == "" {
					t.Errorf("the first ticket's %s is empty", id)
				}
			}
			box, err := page.GetByTestId("ticket-qr").First().BoundingBox()
			must(t, "measure the QR code", err)
			if box == nil || box.Width < 250 {
				t.Errorf("the QR code is %+v on a phone, want at least 250 px wide", box)
			}
			visible, err := page.GetByTestId("tickets-print").IsVisible()
			must(t, "find the print button", err)
			if !visible {
				t.Error("the print button is hidden although the page's script runs")
			}
			screenshot(t, page, lang+"-phone-tickets")
			must(t, "print media", page.EmulateMedia(playwright.PageEmulateMediaOptions{Media: playwright.MediaPrint}))
			if visible, _ := page.GetByTestId("order-items").IsVisible(); visible {
				t.Error("printed, the order page shows its items table, want the tickets alone")
			}
			screenshot(t, page, lang+"-tickets-print")
		})
	}
}

// At a phone's width, in English and in Korean (whose labels are longer), a
// fan holding the most seats an account may (5), two of them in an order
// awaiting payment, reads every held seat in the bottom bar without a
// sideways swipe: the held seats' list is no wider than the bar, and each
// seat's Release button or "Awaiting payment" link lies within the screen,
// with the map's script and without JavaScript (the section's list). On a
// short phone (375 × 667) as on a tall one the check-out button stays in
// the bar in sight, the held seats' list scrolling in the bar to reach each
// seat. On a desktop (1280 × 800) each seat's button or link is one line
// in the side's narrow column. Without JavaScript the map page, which has
// no hold panel, draws no bar.
// Screenshots: e2e/screenshots/<lang>-phone-five-held, -phone-five-held-nojs,
// their -<width>x<height> views, <lang>-phone-map-nojs-<width>x<height> and
// <lang>-desktop-five-held (the whole page; -1280x800 the screen).
func TestPhone_FiveHeldSeats(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[demo.HallName]
	for i, lang := range []string{views.English, views.Korean} {
		t.Run(lang, func(t *testing.T) {
			bctx, page := newPageIn(t, "en-US")
			logInWithLang(t, a, bctx, page, "fan"+strconv.Itoa(i+1)+"@boxoffice.test", lang)
			enter(t, a, page, hall)
			// Each language's fan holds seats of a row of their own.
			row := "1층 C-" + strconv.Itoa(9+i) + "-"
			holdAndCheckOut(t, a, page, row+"10", row+"11")
			openSeatMap(t, a, page, hall)
			for _, n := range []string{"12", "13", "14"} {
				must(t, "choose "+row+n, seat(page, row+n).Click())
			}
			must(t, "hold", page.GetByTestId("hold-submit").Click())
			must(t, "wait for the 5 held seats", page.Locator(`[data-testid=held-seats] li`).Nth(4).WaitFor())
			must(t, "wait for the order's link", page.GetByTestId("in-order-"+row+"10").WaitFor())
			must(t, "resize", page.SetViewportSize(1280, 800))
			wantHeldControlsOneLine(t, page)
			screenshot(t, page, lang+"-desktop-five-held")
			must(t, "scroll to the check-out button", page.GetByTestId("checkout").ScrollIntoViewIfNeeded())
			viewportScreenshot(t, page, lang+"-desktop-five-held-1280x800")

			must(t, "resize", page.SetViewportSize(390, 844))
			wantBottomBar(t, page, "checkout")
			wantHeldSeatsFit(t, page)
			viewportScreenshot(t, page, lang+"-phone-five-held")
			wantCheckoutInSight(t, page, lang+"-phone-five-held")
			wantPageEndShows(t, page, lang+"-phone-five-held")

			plain := phonePageWithoutJS(t, bctx)
			_, err := plain.Goto(a.URL + views.SectionSeatsURL(hall, "1층 C"))
			must(t, "open the section's list", err)
			wantBottomBar(t, plain, "checkout")
			wantHeldSeatsFit(t, plain)
			viewportScreenshot(t, plain, lang+"-phone-five-held-nojs")
			wantCheckoutInSight(t, plain, lang+"-phone-five-held-nojs")
			wantPageEndShows(t, plain, lang+"-phone-five-held-nojs")
			_, err = plain.Goto(a.URL + views.SeatsURL(hall))
			must(t, "open the seat map without JavaScript", err)
			wantNoBar(t, plain, lang+"-phone-map-nojs")
		})
	}
}

// Without JavaScript, a fan who holds no seats opens the seat map at a
// phone's size: the page ends with its list of sections and its footer, no
// empty hold bar below them (the fan's panel comes by script, so the map
// page's bar has nothing to show). Screenshots:
// e2e/screenshots/en-phone-map-nojs-empty-<width>x<height>.
func TestPhone_MapWithoutJSHasNoBar(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[demo.HallName]
	bctx, page := newPageIn(t, "en-US")
	logInWithLang(t, a, bctx, page, "fan3@boxoffice.test", views.English)
	enter(t, a, page, hall)
	plain := phonePageWithoutJS(t, bctx)
	_, err := plain.Goto(a.URL + views.SeatsURL(hall))
	must(t, "open the seat map without JavaScript", err)
	wantNoBar(t, plain, "en-phone-map-nojs-empty")
}

// wantCheckoutInSight checks, at a short phone's 375 × 667 and a phone's
// 390 × 844 with the page scrolled halfway, that the check-out button lies
// inside the hold bar and the screen, on top (no part of the page or of
// the bar over its middle), with the bar itself not scrolled; and that
// each held seat's Release button or order link can be brought into the
// bar's sight by scrolling the held seats' list alone, the check-out
// button staying where it was. It leaves the viewport at 390 × 844.
// Screenshots: e2e/screenshots/<name>-<width>x<height>.
func wantCheckoutInSight(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	for _, size := range [][2]int{{375, 667}, {390, 844}} {
		must(t, "resize", page.SetViewportSize(size[0], size[1]))
		got, err := page.Evaluate(`() => {
			window.scrollTo(0, (document.documentElement.scrollHeight - innerHeight) / 2);
			const bar = document.querySelector("[data-testid=hold-bar]");
			const checkout = bar.querySelector("[data-testid=checkout]");
			const where = () => {
				const b = bar.getBoundingClientRect(), c = checkout.getBoundingClientRect();
				const hit = document.elementFromPoint(c.left + c.width / 2, c.top + c.height / 2);
				return c.top < b.top - 0.5 || c.bottom > b.bottom + 0.5 || c.top < 0 || c.bottom > innerHeight + 0.5 || !hit || !checkout.contains(hit)
					? "the check-out button at " + JSON.stringify([Math.round(c.top), Math.round(c.bottom)]) +
						" in the bar at " + JSON.stringify([Math.round(b.top), Math.round(b.bottom)]) + ", under " + (hit ? hit.outerHTML.slice(0, 60) : "nothing")
					: "";
			};
			const faults = [where()];
			if (bar.scrollTop !== 0) faults.push("the bar scrolled by " + bar.scrollTop + " px");
			const list = bar.querySelector("[data-testid=held-seats]");
			for (const li of list.querySelectorAll("li")) {
				const control = li.querySelector("button, a");
				control.scrollIntoView({block: "nearest"});
				const r = control.getBoundingClientRect(), l = list.getBoundingClientRect(), b = bar.getBoundingClientRect();
				if (r.top < Math.max(l.top, b.top, 0) - 0.5 || r.bottom > Math.min(l.bottom, b.bottom, innerHeight) + 0.5) {
					faults.push(li.dataset.seat + "'s control at " + JSON.stringify([Math.round(r.top), Math.round(r.bottom)]) +
						" out of the list's sight " + JSON.stringify([Math.round(l.top), Math.round(l.bottom)]));
				}
				faults.push(where());
			}
			list.scrollTop = 0;
			window.scrollTo(0, (document.documentElement.scrollHeight - innerHeight) / 2);
			return [...new Set(faults.filter(Boolean))];
		}`)
		must(t, "look for the check-out button", err)
		if faults, _ := got.([]any); len(faults) > 0 {
			t.Errorf("at %d × %d with five held seats: %v; want the check-out button in the bar in sight and every seat within reach of the list's scroll", size[0], size[1], faults)
		}
		viewportScreenshot(t, page, fmt.Sprintf("%s-%dx%d", name, size[0], size[1]))
	}
}

// wantNoBar checks, at a short phone's 375 × 667 and a phone's 390 × 844,
// that the page draws no hold bar (it has nothing in it) and shows its
// footer at its end. It leaves the viewport at 390 × 844. Screenshots:
// e2e/screenshots/<name>-<width>x<height>, scrolled to the end.
func wantNoBar(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	for _, size := range [][2]int{{375, 667}, {390, 844}} {
		must(t, "resize", page.SetViewportSize(size[0], size[1]))
		got, err := page.Evaluate(`() => {
			window.scrollTo(0, document.documentElement.scrollHeight);
			const bar = document.querySelector("[data-testid=hold-bar]");
			const footer = document.querySelector("body > footer").getBoundingClientRect();
			const faults = [];
			if (bar && bar.getClientRects().length > 0) {
				const b = bar.getBoundingClientRect();
				faults.push("a hold bar at " + JSON.stringify([Math.round(b.top), Math.round(b.bottom)]) + " holding " + JSON.stringify(bar.innerText.trim()));
			}
			if (footer.bottom > innerHeight + 0.5) faults.push("the footer ends at " + Math.round(footer.bottom) + " px");
			return faults;
		}`)
		must(t, "look for the hold bar", err)
		if faults, _ := got.([]any); len(faults) > 0 {
			t.Errorf("at %d × %d scrolled to the end: %v; want no bar and the footer in sight", size[0], size[1], faults)
		}
		viewportScreenshot(t, page, fmt.Sprintf("%s-%dx%d", name, size[0], size[1]))
	}
}

// wantHeldControlsOneLine checks that each held seat's Release button and
// order link sets its words on one line: the line boxes of its text all
// start at one height.
func wantHeldControlsOneLine(t *testing.T, page playwright.Page) {
	t.Helper()
	got, err := page.GetByTestId("held-seats").First().Evaluate(`list => [...list.querySelectorAll("button, a")].map(el => {
		const range = document.createRange();
		range.selectNodeContents(el);
		const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
		return lines.size === 1 ? "" : el.dataset.testid + " " + JSON.stringify(el.textContent.trim()) + " on " + lines.size + " lines";
	}).filter(Boolean)`, nil)
	must(t, "measure the held seats' buttons", err)
	if wrapped, _ := got.([]any); len(wrapped) > 0 {
		t.Errorf("held seats' controls wrap: %v, want each on one line", wrapped)
	}
}

// wantHeldSeatsFit checks, at a phone's 390 × 844, that the bottom bar's
// list of held seats does not scroll sideways and that each held seat's
// Release button or order link lies within the screen's width and within
// the bar, where a finger can tap it without a swipe.
func wantHeldSeatsFit(t *testing.T, page playwright.Page) {
	t.Helper()
	list := page.GetByTestId("hold-bar").First().GetByTestId("held-seats")
	widths, err := list.Evaluate(`el => [el.scrollWidth, el.clientWidth]`, nil)
	must(t, "measure the held seats' list", err)
	if w, _ := widths.([]any); len(w) != 2 || toFloat(w[0]) > toFloat(w[1]) {
		t.Errorf("the held seats' list is [scrollWidth clientWidth] %v px wide, want no wider than it shows", widths)
	}
	outside, err := list.Evaluate(`list => {
		const bar = list.closest("[data-testid=hold-bar]").getBoundingClientRect();
		return [...list.querySelectorAll("li")].map(li => {
			const c = li.querySelector("button, a");
			const r = c ? c.getBoundingClientRect() : null;
			return !r ? li.dataset.seat + " has no control"
				: r.left < 0 || r.right > 390 || r.top < bar.top || r.bottom > Math.min(bar.bottom, 844)
				? li.dataset.seat + " " + JSON.stringify([r.left, r.top, r.right, r.bottom]) : "";
		}).filter(Boolean);
	}`, nil)
	must(t, "measure the held seats' controls", err)
	if got, _ := outside.([]any); len(got) > 0 {
		t.Errorf("held seats' controls outside the 390 × 844 screen or the bar: %v", got)
	}
	fitsPhone(t, page, "the seat map page")
}

// wantPageEndShows checks, at a phone's 390 × 844 and a short phone's
// 375 × 667, that the hold bar stays at the screen's bottom halfway down
// the page, and that scrolled to the very bottom the page shows its end:
// the footer and every link, button, field, label, list item and paragraph
// of the page lie clear of the hold bar, none under it, so the bar hides
// nothing that scrolling cannot bring into view. It leaves the viewport at
// 390 × 844. Screenshots:
// e2e/screenshots/<name>-bottom-<width>x<height>.
func wantPageEndShows(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	for _, size := range [][2]int{{375, 667}, {390, 844}} {
		must(t, "resize", page.SetViewportSize(size[0], size[1]))
		middle, err := page.Evaluate(`() => {
			window.scrollTo(0, (document.documentElement.scrollHeight - innerHeight) / 2);
			return document.querySelector("[data-testid=hold-bar]").getBoundingClientRect().bottom;
		}`)
		must(t, "scroll halfway", err)
		if b := toFloat(middle); b < float64(size[1])-1 || b > float64(size[1])+1 {
			t.Errorf("at %d × %d scrolled halfway, the hold bar ends at %v px, want it at the screen's bottom", size[0], size[1], b)
		}
		under, err := page.Evaluate(`() => {
			window.scrollTo(0, document.documentElement.scrollHeight);
			const bar = document.querySelector("[data-testid=hold-bar]");
			const b = bar.getBoundingClientRect();
			return [...document.querySelectorAll("body > footer, main a, main button, main input:not([type=hidden]), main label, main li, main p, main h2")]
				.filter(el => !bar.contains(el) && el.getClientRects().length > 0)
				.map(el => [el, el.getBoundingClientRect()])
				.filter(([, r]) => r.height > 0 && r.bottom > b.top + 0.5 && r.top < b.bottom - 0.5)
				.map(([el, r]) => el.tagName.toLowerCase() + (el.dataset.testid ? "[" + el.dataset.testid + "]" : "") +
					" " + JSON.stringify([Math.round(r.top), Math.round(r.bottom)]) + " bar " + JSON.stringify([Math.round(b.top), Math.round(b.bottom)]))
				.slice(0, 6);
		}`)
		must(t, "look under the hold bar", err)
		if got, _ := under.([]any); len(got) > 0 {
			t.Errorf("at %d × %d scrolled to the bottom, the hold bar hides %v, want everything clear of it", size[0], size[1], got)
		}
		viewportScreenshot(t, page, fmt.Sprintf("%s-bottom-%dx%d", name, size[0], size[1]))
	}
}

// At a phone's width, two fingers moving apart on the map zoom it in: two
// touch pointers go down on the map's box, move apart to twice their
// distance and lift, and the map's zoom (--zoom on its host) and drawn width
// grow.
func TestPhone_PinchZoom(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[demo.HallName]
	_, page := newPageIn(t, "en-US")
	must(t, "resize", page.SetViewportSize(390, 844))
	_, err := page.Goto(a.URL + "/login")
	must(t, "open log-in", err)
	submitLogin(t, page, "fan3@boxoffice.test")
	waitForURL(t, page, "wait for home", a.URL+"/")
	enter(t, a, page, hall)
	host := page.Locator("#seatmap-host")
	before, err := host.BoundingBox()
	must(t, "measure the map", err)
	_, err = page.Locator("[data-map-box]").Evaluate(`box => {
		const r = box.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
		const target = document.getElementById("seatmap-host");
		const send = (type, id, dx) => target.dispatchEvent(new PointerEvent(type, {
			bubbles: true, cancelable: true, pointerId: id, pointerType: "touch", isPrimary: id === 1,
			clientX: x + dx, clientY: y,
		}));
		send("pointerdown", 1, -30);
		send("pointerdown", 2, 30);
		for (let step = 1; step <= 5; step++) {
			send("pointermove", 1, -30 - 6 * step);
			send("pointermove", 2, 30 + 6 * step);
		}
		send("pointerup", 1, -60);
		send("pointerup", 2, 60);
	}`, nil)
	must(t, "pinch the map", err)
	level, err := host.Evaluate(`el => el.style.getPropertyValue("--zoom")`, nil)
	must(t, "read the zoom", err)
	if z, err := strconv.ParseFloat(fmt.Sprint(level), 64); err != nil || z < 1.9 {
		t.Errorf("after two fingers moved to twice their distance the zoom is %q, want about 2", level)
	}
	after, err := host.BoundingBox()
	must(t, "measure the map again", err)
	if before == nil || after == nil || after.Width < 1.9*before.Width {
		t.Errorf("the map is %+v after the pinch, %+v before: want it about twice as wide", after, before)
	}
	screenshot(t, page, "en-phone-pinched")
}

// wantBottomBar checks that the hold bar is sticky at the bottom of the
// 844 px high viewport (the page scrolled above its end), across its
// width, and that the next action (the button with data-testid action) is
// visible inside it.
func wantBottomBar(t *testing.T, page playwright.Page, action string) {
	t.Helper()
	bar := page.GetByTestId("hold-bar").First()
	position, err := bar.Evaluate(`el => getComputedStyle(el).position`, nil)
	must(t, "read the bar's position", err)
	if position != "sticky" {
		t.Errorf("the hold bar's position is %v, want sticky", position)
	}
	box, err := bar.BoundingBox()
	must(t, "measure the hold bar", err)
	if box == nil || box.Y+box.Height < 843 || box.Y+box.Height > 845 || box.X > 1 || box.Width < 388 {
		t.Errorf("the hold bar is at %+v, want it across the bottom of a 390 × 844 viewport", box)
	}
	button, err := bar.GetByTestId(action).BoundingBox()
	must(t, "measure "+action, err)
	if button == nil || box == nil || button.Y < box.Y || button.Y+button.Height > 844 {
		t.Errorf("%s is at %+v, want it inside the bar at %+v", action, button, box)
	}
	if visible, _ := bar.GetByTestId(action).IsVisible(); !visible {
		t.Errorf("%s is hidden, want it visible in the bar", action)
	}
	// Nothing of the page lies over the bar: at each corner and in the
	// middle of its top edge, the element on top is the bar's own.
	covered, err := bar.Evaluate(`bar => {
		const r = bar.getBoundingClientRect();
		return [[r.left + 4, r.top + 4], [r.left + r.width / 2, r.top + 4], [r.right - 4, r.top + 4], [r.right - 60, r.top + 8]]
			.map(([x, y]) => document.elementFromPoint(x, y))
			.filter(el => !bar.contains(el))
			.map(el => el.outerHTML.slice(0, 80));
	}`, nil)
	must(t, "look over the bar", err)
	if got, _ := covered.([]any); len(got) > 0 {
		t.Errorf("the hold bar lies under %v, want it on top", got)
	}
}

// nextTo reports whether seat labels a and b are in one row with b's number
// one more than a's.
func nextTo(a, b string) bool {
	i, j := strings.LastIndex(a, "-"), strings.LastIndex(b, "-")
	if i < 0 || j < 0 || a[:i] != b[:j] {
		return false
	}
	na, errA := strconv.Atoi(a[i+1:])
	nb, errB := strconv.Atoi(b[j+1:])
	return errA == nil && errB == nil && nb == na+1
}

// fitsPhone fails the test unless the page, at a phone's 390 px, scrolls
// no wider than the screen; the message names the elements that stick out.
func fitsPhone(t *testing.T, page playwright.Page, what string) {
	t.Helper()
	width, err := page.Evaluate(`() => document.documentElement.scrollWidth`)
	must(t, "measure "+what, err)
	if w, _ := width.(int); w <= 390 {
		return
	}
	wide, err := page.Evaluate(`() => [...document.querySelectorAll("body *")]
		.filter(e => e.getBoundingClientRect().right > 390.5)
		.slice(0, 8)
		.map(e => e.tagName.toLowerCase() + (e.className ? "." + String(e.className).split(" ").join(".") : "") + " " + Math.round(e.getBoundingClientRect().right))`)
	must(t, "find what sticks out of "+what, err)
	t.Errorf("%s scrolls %v px wide at 390 px, want at most 390: %v", what, width, wide)
}

// On a phone, in each language: a fan whose payment the PG refused for a
// tampered amount is told on the order page that nothing was charged, and
// a fan who left the sale is told so by the waiting room, with a button to
// join again; both pages fit the phone's width.
func TestPhone_AmountRefusedAndLeft(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[concertHall]
	for i, lang := range []string{views.English, views.Korean} {
		t.Run(lang, func(t *testing.T) {
			bctx, page := newPageIn(t, "en-US")
			must(t, "resize", page.SetViewportSize(390, 844))
			logInWithLang(t, a, bctx, page, "fan"+strconv.Itoa(i+1)+"@boxoffice.test", lang)
			enter(t, a, page, hall)
			holdAndCheckOut(t, a, page, "1층 C-5-"+strconv.Itoa(10+i))
			_, err := page.GetByTestId("pg-scenario").SelectOption(playwright.SelectOptionValues{Values: &[]string{"tamper_amount"}})
			must(t, "choose the tampered amount", err)
			must(t, "pay", page.GetByTestId("pg-pay").Click())
			waitForURL(t, page, "wait for the order page", a.URL+"/orders/**")
			if got, want := text(t, page, "order-failure"), views.In(lang, boxoffice.M("order_fail_amount_uncharged")); got != want {
				t.Errorf("order-failure %q, want %q", got, want)
			}
			fitsPhone(t, page, "the order page")
			screenshot(t, page, lang+"-phone-order-amount-refused")

			enter(t, a, page, hall)
			must(t, "leave the sale", page.GetByTestId("leave").Click())
			waitForURL(t, page, "wait for the event page", a.URL+"/events/"+strconv.FormatInt(hall, 10))
			_, err = page.Goto(a.URL + "/events/" + strconv.FormatInt(hall, 10) + "/queue")
			must(t, "open the waiting room", err)
			if got, want := text(t, page, "queue-left"), views.In(lang, boxoffice.M("entry_left")); got != want {
				t.Errorf("queue-left %q, want %q", got, want)
			}
			must(t, "wait for the join button", page.GetByTestId("rejoin").WaitFor())
			fitsPhone(t, page, "the waiting room")
			screenshot(t, page, lang+"-phone-queue-left")
		})
	}
}

// phonePageWithoutJS opens a page at a phone's size (390x844) in a new
// browser context without JavaScript that shares bctx's cookies (the
// session), closed when the test ends.
func phonePageWithoutJS(t *testing.T, bctx playwright.BrowserContext) playwright.Page {
	t.Helper()
	cookies, err := bctx.Cookies()
	must(t, "read the cookies", err)
	noJS, err := browser.NewContext(playwright.BrowserNewContextOptions{
		JavaScriptEnabled: playwright.Bool(false),
		Viewport:          &playwright.Size{Width: 390, Height: 844},
	})
	must(t, "open a context without JavaScript", err)
	t.Cleanup(func() { noJS.Close() })
	optional := make([]playwright.OptionalCookie, len(cookies))
	for i, c := range cookies {
		optional[i] = c.ToOptionalCookie()
	}
	must(t, "share the session", noJS.AddCookies(optional))
	plain, err := noJS.NewPage()
	must(t, "open a page without JavaScript", err)
	return plain
}

// Without JavaScript, in English and in Korean, the list of a section's
// seats, after a second hold (whose notice says what it added), keeps each
// seat's status with its seat: at a short phone's 375 × 667, a phone's
// 390 × 844 and a desktop's 1280 × 800, each "(held by you)" lies on one
// line just after its seat's number, within the seat's label, and no seat's
// label overlaps another's, so that no status sits in the gap before the
// next seat, where it reads as that seat's. Screenshots:
// e2e/screenshots/<lang>-list-status-nojs-<width>x<height> (the whole page)
// and its -row (the fan's row, which a phone's hold bar covers in the other).
func TestPhone_SectionListStatusWithSeat(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[demo.HallName]
	for i, lang := range []string{views.English, views.Korean} {
		t.Run(lang, func(t *testing.T) {
			bctx, page := newPageIn(t, "en-US")
			logInWithLang(t, a, bctx, page, "fan"+strconv.Itoa(i+1)+"@boxoffice.test", lang)
			enter(t, a, page, hall)
			plain := phonePageWithoutJS(t, bctx)
			_, err := plain.Goto(a.URL + views.SectionSeatsURL(hall, "1층 C"))
			must(t, "open the section's list", err)
			// Each language's fan holds seats of a row of their own (the
			// Korean fan's list shows the English fan's as held by someone
			// else): the first two, then a middle one and the last.
			row := plain.Locator(`fieldset.list-row`).Nth(2 + i)
			boxes := row.Locator(`input[name=seat]`)
			n, err := boxes.Count()
			must(t, "count the row's seats", err)
			for held, seats := range [][]int{{0, 1}, {n / 2, n - 1}} {
				for _, k := range seats {
					must(t, "choose a seat", boxes.Nth(k).Check())
				}
				must(t, "hold", plain.GetByTestId("list-submit").Click())
				must(t, "wait for the held seats", plain.Locator(`[data-testid=held-seats] li`).Nth(2*held+1).WaitFor())
			}
			// The second hold's notice says it added 2 seats to make 4, and
			// gives the countdown's time.
			countdown, err := plain.Locator(`[data-countdown]`).First().TextContent()
			must(t, "read the countdown", err)
			want := views.In(lang, boxoffice.M("hold_notice_added", "Count", 2, "Total", 4, "Time", strings.TrimSpace(countdown)))
			if got := text(t, plain, "hold-notice"); got != want {
				t.Errorf("hold-notice %q, want %q", got, want)
			}
			for _, size := range [][2]int{{375, 667}, {390, 844}, {1280, 800}} {
				must(t, "resize", plain.SetViewportSize(size[0], size[1]))
				name := fmt.Sprintf("%s-list-status-nojs-%dx%d", lang, size[0], size[1])
				screenshot(t, plain, name)
				screenshotUnderBar(t, plain, row, name+"-row")
				wantStatusWithSeat(t, plain, name)
			}
		})
	}
}

// screenshotUnderBar saves the element as e2e/screenshots/<name>.png with
// the hold bar hidden, which on a phone stays over part of the page.
func screenshotUnderBar(t *testing.T, page playwright.Page, el playwright.Locator, name string) {
	t.Helper()
	show := func(visibility string) {
		_, err := page.Evaluate(`v => document.querySelector("[data-testid=hold-bar]").style.visibility = v`, visibility)
		must(t, "set the hold bar's visibility", err)
	}
	show("hidden")
	defer show("")
	path, err := filepath.Abs(filepath.Join("screenshots", name+".png"))
	must(t, "screenshot path", err)
	_, err = el.Screenshot(playwright.LocatorScreenshotOptions{Path: playwright.String(path)})
	must(t, "screenshot "+name, err)
}

// wantStatusWithSeat checks that each seat of the list that has a status
// shows it on one line, on its number's line and just after the number
// (within 16 px), inside the seat's label, and that no two seats' labels
// overlap.
func wantStatusWithSeat(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	got, err := page.Evaluate(`() => {
		const labels = [...document.querySelectorAll(".list-seat")];
		const bad = [];
		let statuses = 0;
		const box = r => JSON.stringify([r.left, r.top, r.right, r.bottom].map(Math.round));
		for (const l of labels) {
			const small = l.querySelector("small");
			if (!small) continue;
			statuses++;
			const number = [...l.childNodes].find(n => n.nodeType === Node.TEXT_NODE && n.textContent.trim() !== "");
			const range = document.createRange();
			range.selectNodeContents(number);
			const num = [...range.getClientRects()].filter(r => r.width > 0)[0], label = l.getBoundingClientRect();
			const lines = [...small.getClientRects()].filter(r => r.width > 0);
			const middle = lines.length ? (lines[0].top + lines[0].bottom) / 2 : 0;
			const off = !num || lines.length !== 1 || lines[0].left < num.right || lines[0].left > num.right + 16 ||
				lines[0].right > label.right + 0.5 || middle < num.top || middle > num.bottom;
			if (off) bad.push(l.querySelector("input").value + " number " + (num ? box(num) : "none") + " status " + lines.map(box).join(" "));
		}
		for (let i = 0; i < labels.length; i++) {
			const a = labels[i].getBoundingClientRect();
			for (let j = i + 1; j < labels.length; j++) {
				const b = labels[j].getBoundingClientRect();
				if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) {
					bad.push(labels[i].querySelector("input").value + " overlaps " + labels[j].querySelector("input").value);
				}
			}
		}
		return statuses === 0 ? ["no seat shows a status"] : bad;
	}`)
	must(t, "measure the list's statuses", err)
	if bad, _ := got.([]any); len(bad) > 0 {
		t.Errorf("%s: statuses apart from their seats: %v", name, bad)
	}
}
