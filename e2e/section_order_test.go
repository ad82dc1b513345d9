package e2e

import (
	"path/filepath"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

// An admin on a phone sets a section's best-first order on the venue's
// page; the page shows it saved, in English and in Korean.
func TestAdminVenue_SectionOrder(t *testing.T) {
	a := startApp(t)
	demoEvents(t, a)
	admin := login(t, a, "admin@boxoffice.test")
	must(t, "resize", admin.SetViewportSize(390, 844))
	_, err := admin.Goto(a.URL + "/admin/venues")
	must(t, "open the venues", err)
	must(t, "open the first venue", admin.GetByTestId("venue-link").First().Click())
	must(t, "wait for the venue", admin.GetByTestId("order-form").WaitFor())
	first := admin.GetByTestId("order-section").First()
	must(t, "rank", first.GetByTestId("order-rank").Fill("1"))
	_, err = first.GetByTestId("order-rows").SelectOption(playwright.SelectOptionValues{Values: &[]string{"descending"}})
	must(t, "row order", err)
	_, err = first.GetByTestId("order-seats").SelectOption(playwright.SelectOptionValues{Values: &[]string{"low"}})
	must(t, "seat order", err)
	must(t, "save", admin.GetByTestId("order-submit").Click())
	must(t, "wait for the saved page", admin.GetByTestId("flash").WaitFor())
	if got, err := first.GetByTestId("order-rank").InputValue(); err != nil || got != "1" {
		t.Errorf("rank after saving = %q (%v), want 1", got, err)
	}
	if got, err := first.GetByTestId("order-rows").InputValue(); err != nil || got != "descending" {
		t.Errorf("row order after saving = %q (%v), want descending", got, err)
	}
	orderScreenshot(t, admin, "venue-order-en")
	korean(t, a, admin)
	orderScreenshot(t, admin, "venue-order-ko")
}

// orderScreenshot saves what a phone shows of the order form's top, as
// e2e/screenshots/<name>.png, and the whole page as <name>-page.png.
func orderScreenshot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	screenshot(t, page, name+"-page")
	must(t, "scroll to the order form", page.GetByTestId("order-card").Locator("header").ScrollIntoViewIfNeeded())
	_, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(filepath.Join("screenshots", name+".png"))})
	must(t, "screenshot "+name, err)
}
