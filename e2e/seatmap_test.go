package e2e

import (
	"context"
	"encoding/json"
	"github.com/boxoffice/boxoffice/demo"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store"
	"github.com/mxschmitt/playwright-go"
)

// demoEvents seeds the demo (seedDemo) and returns its events' ids by venue
// name.
func demoEvents(t *testing.T, a *app) map[string]int64 {
	t.Helper()
	seedDemo(t, a)
	req, _ := http.NewRequest("GET", a.URL+"/", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, "list events", err)
	defer resp.Body.Close()
	var body struct {
		Events []struct {
			ID    int64
			Venue string
		}
	}
	must(t, "decode events", json.NewDecoder(resp.Body).Decode(&body))
	ids := map[string]int64{}
	for _, e := range body.Events {
		ids[e.Venue] = e.ID
	}
	return ids
}

// enter joins the event's queue from its page and waits until the waiting
// room leads to the seat map, then until the map's script is ready.
func enter(t *testing.T, a *app, page playwright.Page, eventID int64) {
	t.Helper()
	_, err := page.Goto(a.URL + "/events/" + strconv.FormatInt(eventID, 10))
	must(t, "open the event", err)
	must(t, "join the queue", page.GetByTestId("join-queue").Click())
	waitForURL(t, page, "wait for the seat map", a.URL+"/events/"+strconv.FormatInt(eventID, 10)+"/seats")
	waitSeatMap(t, page)
}

// openSeatMap opens the event's seat map and waits until its script is ready.
func openSeatMap(t *testing.T, a *app, page playwright.Page, eventID int64) {
	t.Helper()
	_, err := page.Goto(a.URL + "/events/" + strconv.FormatInt(eventID, 10) + "/seats")
	must(t, "open the seat map", err)
	waitSeatMap(t, page)
}

func waitSeatMap(t *testing.T, page playwright.Page) {
	t.Helper()
	_, err := page.WaitForFunction(`() => performance.getEntriesByName("seatmap-ready").length > 0`, nil)
	must(t, "wait for the seat map's script", err)
}

func seat(page playwright.Page, label string) playwright.Locator {
	return page.Locator(`circle[data-id="` + label + `"]`)
}

// waitSeat waits until the seat's class list matches the CSS condition, such
// as ".held" or ":not(.held)".
func waitSeat(t *testing.T, page playwright.Page, label, condition string) {
	t.Helper()
	must(t, "wait for seat "+label+condition, page.Locator(`circle[data-id="`+label+`"]`+condition).WaitFor(playwright.LocatorWaitForOptions{
		State: playwright.WaitForSelectorStateAttached,
	}))
}

func TestSeatMap_HoldCountdownRelease(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	events := demoEvents(t, a)
	hall, arena := events[demo.HallName], events[demo.ArenaName]
	if hall == 0 || arena == 0 {
		t.Fatalf("demo events = %v, want the concert hall and the arena", events)
	}
	const first, second = "1층 C-3-10", "1층 C-3-11"

	fan1 := login(t, a, "fan1@boxoffice.test")
	must(t, "set viewport", fan1.SetViewportSize(1400, 950))
	enter(t, a, fan1, hall)
	screenshot(t, fan1, "seatmap-hall")
	if got := text(t, fan1, "seats-left"); !strings.Contains(got, "5 more of your 5") {
		t.Errorf("seats left = %q, want 5 more of your 5", got)
	}

	must(t, "choose "+first, seat(fan1, first).Click())
	must(t, "choose "+second+" with the keyboard", seat(fan1, first).Press("ArrowRight"))
	must(t, "press Enter", fan1.Keyboard().Press("Enter"))
	if got := text(t, fan1, "selection"); !strings.Contains(got, "Section 1층 C, row 3, seat 10") || !strings.Contains(got, "Section 1층 C, row 3, seat 11") {
		t.Fatalf("selection = %q, want seats 10 and 11 of row 3", got)
	}
	screenshot(t, fan1, "seatmap-hall-selected")
	zoomInto(t, fan1, 0, 113)
	mapScreenshot(t, fan1, "seatmap-hall-selected-zoomed")
	must(t, "show the whole venue", fan1.Locator("[data-zoom=fit]").Click())
	_, err := fan1.Evaluate(`() => { window.beforeHold = true; }`)
	must(t, "mark the page", err)
	must(t, "hold", fan1.GetByTestId("hold-submit").Click())
	must(t, "wait for the held seats", fan1.Locator(`[data-testid=held-seats] li`).Nth(1).WaitFor())
	waitSeat(t, fan1, first, ".mine")
	if same, _ := fan1.Evaluate(`() => window.beforeHold === true`); same != true {
		t.Error("holding reloaded the page, want the hold panel swapped in by htmx")
	}
	if n, _ := fan1.Locator("[data-testid=selection] li").Count(); n != 0 {
		t.Errorf("%d seats still in the selection after holding them, want none", n)
	}
	countdown := fan1.Locator("[data-countdown]")
	var before string
	before, err = countdown.TextContent()
	must(t, "read the countdown", err)
	if !strings.Contains(before, "min") {
		t.Errorf("countdown = %q, want minutes left", before)
	}
	if got := text(t, fan1, "seats-left"); !strings.Contains(got, "3 more of your 5") {
		t.Errorf("seats left after holding 2 = %q, want 3 more of your 5", got)
	}
	_, err = fan1.WaitForFunction(`(before) => document.querySelector("[data-countdown]").textContent !== before`, before)
	must(t, "wait for the countdown to move", err)
	screenshot(t, fan1, "seatmap-hall-held")

	fan2 := login(t, a, "fan2@boxoffice.test")
	must(t, "set viewport", fan2.SetViewportSize(1400, 950))
	enter(t, a, fan2, hall)
	waitSeat(t, fan2, first, ".held")
	waitSeat(t, fan2, second, ".held")
	screenshot(t, fan2, "seatmap-hall-other-fan")
	zoomInto(t, fan2, 0, 113) // just in front of section 1층 C's first row
	mapScreenshot(t, fan2, "seatmap-hall-other-fan-zoomed")
	// Playwright refuses to click what is aria-disabled unless forced
	must(t, "click a held seat", seat(fan2, first).Click(playwright.LocatorClickOptions{Force: playwright.Bool(true)}))
	if n, _ := fan2.Locator("[data-testid=selection] li").Count(); n != 0 {
		t.Errorf("a seat held by another fan was chosen (%d in the selection)", n)
	}

	must(t, "release "+first, fan1.GetByTestId("release-"+first).Click())
	must(t, "wait for the release", fan1.Locator(`[data-testid=held-seats] li`).Nth(1).WaitFor(playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateDetached}))

	waitSeat(t, fan2, first, ":not(.held)") // by the status refresh, without a reload
	waitSeat(t, fan2, second, ".held")
	must(t, "choose the released seat", seat(fan2, first).Click())
	must(t, "hold it", fan2.GetByTestId("hold-submit").Click())
	waitSeat(t, fan2, first, ".mine")
	if got := text(t, fan2, "held-seats"); !strings.Contains(got, "Section 1층 C, row 3, seat 10") {
		t.Errorf("the second fan's held seats = %q, want seat 10 of row 3", got)
	}
	mapScreenshot(t, fan2, "seatmap-hall-second-fan-holds-zoomed") // before a full-page shot resizes the map
	screenshot(t, fan2, "seatmap-hall-second-fan-holds")

	// a hold's end: with a 2-second hold TTL, the countdown reaches zero, the
	// seat shows as free again, and the panel resynchronises with the hold
	// that is left (the first fan's second seat, minutes to go)
	db, err := store.OpenDB(context.Background(), a.DatabaseURL)
	must(t, "open the database", err)
	defer db.Close()
	_, err = db.Pool.Exec(context.Background(), `UPDATE event SET hold_ttl_seconds = 2 WHERE id = $1`, hall)
	must(t, "shorten the hold TTL", err)
	time.Sleep(1100 * time.Millisecond) // the app's event cache lives a second
	const brief = "1층 C-6-1"
	openSeatMap(t, a, fan1, hall)
	must(t, "choose "+brief, seat(fan1, brief).Click())
	must(t, "hold it", fan1.GetByTestId("hold-submit").Click())
	waitSeat(t, fan1, brief, ".mine")
	waitSeat(t, fan1, brief, ":not(.mine)")
	must(t, "wait for the panel to resynchronise", fan1.Locator(`[data-testid=held-seats] li[data-seat="`+brief+`"]`).WaitFor(playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateDetached}))
	if got := text(t, fan1, "held-seats"); !strings.Contains(got, "Section 1층 C, row 3, seat 11") {
		t.Errorf("held seats after the short hold ended = %q, want seat 11 of row 3 still", got)
	}
	if got := text(t, fan1, "hold-countdown"); !strings.Contains(got, "min") {
		t.Errorf("countdown after the short hold ended = %q, want minutes for the hold that is left", got)
	}

	// without the map: the list of a section's seats
	_, err = fan2.Goto(a.URL + "/events/" + strconv.FormatInt(hall, 10) + "/seats?section=" + url.QueryEscape("1층 C") + "#pick")
	must(t, "open the list of section 1층 C", err)
	screenshot(t, fan2, "seatmap-hall-list")

	// The arena's 15,000 seats: the browser's own timing, cold (the first
	// request loads the seats into the process and renders and compresses
	// the page that every fan shares) and warm (the browser's copy, which
	// the server confirms with 304 Not Modified). mapDrawn is when the
	// script found the map; scriptReady when the fan's statuses and hold
	// panel are in.
	enter(t, a, fan2, arena)
	for _, run := range []string{"cold", "warm"} {
		if run == "warm" {
			openSeatMap(t, a, fan2, arena)
		}
		timing, err := fan2.Evaluate(`() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
			const n = performance.getEntriesByType("navigation")[0];
			const fcp = performance.getEntriesByName("first-contentful-paint")[0];
			done({
				responseEnd: Math.round(n.responseEnd),
				domContentLoaded: Math.round(n.domContentLoadedEventEnd),
				load: Math.round(n.loadEventEnd),
				firstContentfulPaint: fcp ? Math.round(fcp.startTime) : -1,
				mapDrawn: Math.round(performance.getEntriesByName("seatmap-drawn")[0].startTime),
				scriptReady: Math.round(performance.getEntriesByName("seatmap-ready")[0].startTime),
				painted: Math.round(performance.now()),
				transferKB: Math.round(n.transferSize / 1024),
				htmlKB: Math.round(n.decodedBodySize / 1024),
				seats: document.getElementById("seatmap-host").shadowRoot.querySelectorAll("circle[data-id]").length,
			});
		})))`)
		must(t, "read the arena's timing", err)
		t.Logf("arena seat map (%s), ms since navigation start: %v", run, timing)
		if m, _ := timing.(map[string]any); m["seats"] != 15000 {
			t.Errorf("the arena map draws %v seats, want 15000", m["seats"])
		}
	}
	screenshot(t, fan2, "seatmap-arena")
	zoomInto(t, fan2, 0, -207) // just in front of section F2's first row
	screenshot(t, fan2, "seatmap-arena-zoomed")
}

// zoomInto clicks the map's section outline at (x, y) in layout units,
// which zooms in around it, and waits for the zoom: 4 or more, as far as
// seats need to be a finger's width apart (static/seatmap.js sectionZoom).
func zoomInto(t *testing.T, page playwright.Page, x, y float64) {
	t.Helper()
	at, err := page.Evaluate(`([x, y]) => {
		const svg = document.getElementById("seatmap-host").shadowRoot.getElementById("seatmap"), p = svg.createSVGPoint();
		p.x = x; p.y = y;
		const s = p.matrixTransform(svg.getScreenCTM());
		return [s.x, s.y];
	}`, []float64{x, y})
	must(t, "find the point to zoom into", err)
	xy := at.([]any)
	must(t, "click a section's outline", page.Mouse().Click(toFloat(xy[0]), toFloat(xy[1])))
	_, err = page.WaitForFunction(`() => parseFloat(document.getElementById("seatmap-host").style.getPropertyValue("--zoom")) >= 4`, nil)
	must(t, "wait for the zoom", err)
}

// mapScreenshot saves the map's box alone as e2e/screenshots/<name>.png.
func mapScreenshot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	dir, err := filepath.Abs("screenshots")
	must(t, "screenshot folder", err)
	_, err = page.Locator("[data-map-box]").Screenshot(playwright.LocatorScreenshotOptions{Path: playwright.String(filepath.Join(dir, name+".png"))})
	must(t, "screenshot "+name, err)
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case float64:
		return n
	}
	return 0
}
