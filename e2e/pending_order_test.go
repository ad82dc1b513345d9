package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/mxschmitt/playwright-go"
)

// shotWidths are the widths each screen of an order awaiting payment is
// photographed at: a phone's and a desktop's.
var shotWidths = []struct {
	name          string
	width, height int
}{{"phone", 390, 844}, {"desktop", 1280, 900}}

// screenshotWidths saves the page at each of shotWidths as
// e2e/screenshots/<lang>-<width>-<name>.png.
func screenshotWidths(t *testing.T, page playwright.Page, lang, name string) {
	t.Helper()
	for _, w := range shotWidths {
		must(t, "resize to "+w.name, page.SetViewportSize(w.width, w.height))
		screenshot(t, page, lang+"-"+w.name+"-"+name)
	}
}

// A fan whose order awaits payment, back on the seat map: the hold panel
// shows the order's seats with a link to the order and says why they cannot
// be released, instead of a Release button; leaving the sale is refused
// with a sentence that says checking out again works too; and once the
// payment fails, the order's page says the seats are still held. In both
// languages, photographed at a phone's width and a desktop's.
func TestPendingOrder_Screens(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[concertHall]
	for i, lang := range []string{views.English, views.Korean} {
		t.Run(lang, func(t *testing.T) {
			bctx, page := newPageIn(t, "en-US")
			logInWithLang(t, a, bctx, page, "fan"+strconv.Itoa(i+1)+"@boxoffice.test", lang)
			enter(t, a, page, hall)
			labels := []string{"1층 C-8-" + strconv.Itoa(10+2*i), "1층 C-8-" + strconv.Itoa(11+2*i)}
			holdAndCheckOut(t, a, page, labels...)

			openSeatMap(t, a, page, hall)
			for _, l := range labels {
				must(t, "wait for the order's link of "+l, page.GetByTestId("in-order-"+l).WaitFor())
				if n, err := page.GetByTestId("release-" + l).Count(); err != nil || n != 0 {
					t.Errorf("%d Release buttons for %s (%v), in the order awaiting payment", n, l, err)
				}
			}
			if got, want := text(t, page, "hold-in-order-note"), views.In(lang, boxoffice.M("hold_in_order_note")); got != want {
				t.Errorf("hold-in-order-note %q, want %q", got, want)
			}
			screenshotWidths(t, page, lang, "hold-panel-in-order")

			must(t, "leave the sale", page.GetByTestId("leave").Click())
			must(t, "wait for the refusal", page.GetByTestId("error-message").WaitFor())
			again := map[string]string{views.English: "check out again to pay for all the seats you hold", views.Korean: "선점한 좌석 전체로 다시 결제하거나"}[lang]
			if got := text(t, page, "error-message"); !strings.Contains(got, again) {
				t.Errorf("the refused leave says %q, want %q", got, again)
			}
			screenshotWidths(t, page, lang, "leave-order-pending")

			openSeatMap(t, a, page, hall)
			must(t, "open the order", page.GetByTestId("in-order-"+labels[0]).Click())
			waitForURL(t, page, "wait for the order page", a.URL+"/orders/**")
			must(t, "pay", page.GetByTestId("order-pay").Click())
			waitForURL(t, page, "wait for the PG's page", a.URL+"/sandbox-pg/checkout?**")
			_, err := page.GetByTestId("pg-scenario").SelectOption(playwright.SelectOptionValues{Values: &[]string{"tamper_amount"}})
			must(t, "choose the tampered amount", err)
			must(t, "pay", page.GetByTestId("pg-pay").Click())
			waitForURL(t, page, "wait for the order page", a.URL+"/orders/**")
			must(t, "wait for the failed order's seats", page.GetByTestId("order-failed-held").WaitFor())
			screenshotWidths(t, page, lang, "order-failed-held")

			must(t, "back to the seat map", page.GetByTestId("order-failed-seats").Click())
			waitSeatMap(t, page)
			must(t, "wait for the Release buttons", page.GetByTestId("release-"+labels[0]).WaitFor())
			screenshotWidths(t, page, lang, "hold-panel-after-failure")
		})
	}
}
