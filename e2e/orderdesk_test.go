package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// An admin on a phone finds a fan's order by the start of the fan's e-mail
// (in other letter case), refunds one of its two tickets, and another fan's
// seat map shows that seat free again while the other stays sold.
func TestOrderDesk_FindRefundSeatFree(t *testing.T) {
	a := startApp(t)
	hall := demoEvents(t, a)[concertHall]
	const refunded, kept = "1층 C-3-10", "1층 C-3-11"
	buyer := login(t, a, "fan1@boxoffice.test")
	enter(t, a, buyer, hall)
	holdAndCheckOut(t, a, buyer, refunded, kept)
	must(t, "pay", buyer.GetByTestId("pg-pay").Click())
	waitForURL(t, buyer, "wait for the order page", a.URL+"/orders/**")

	admin := login(t, a, "admin@boxoffice.test")
	must(t, "resize", admin.SetViewportSize(390, 844))
	_, err := admin.Goto(fmt.Sprintf("%s/admin/orders?event=%d", a.URL, hall))
	must(t, "open the order desk", err)
	must(t, "type the search", admin.GetByTestId("filter-q").Fill("FAN1@"))
	must(t, "search", admin.GetByTestId("filter-submit").Click())
	_, err = admin.WaitForFunction(`() => new URLSearchParams(location.search).get("q") === "FAN1@" && document.readyState === "complete"`, nil)
	must(t, "wait for the search", err)
	if n, err := admin.GetByTestId("order-row").Count(); err != nil || n != 1 {
		t.Fatalf("the search for FAN1@ found %d orders (%v), want fan1's one", n, err)
	}
	if got := text(t, admin, "order-buyer"); !strings.Contains(got, "fan1@boxoffice.test") {
		t.Errorf("the order found is %q's, want fan1@boxoffice.test's", got)
	}
	fitsPhone(t, admin, "the order desk")
	screenshot(t, admin, "order-desk-search-en")
	must(t, "open the order", admin.GetByTestId("order-link").Click())
	waitForURL(t, admin, "wait for the order", a.URL+"/admin/orders/**")

	must(t, "tick "+refunded, admin.Locator(`[data-testid="refund-seat"][value="`+refunded+`"]`).Check())
	must(t, "write the reason", admin.GetByTestId("refund-reason").Fill("Seat moved for the camera"))
	must(t, "refund", admin.GetByTestId("refund-submit").Click())
	must(t, "wait for the refund", admin.GetByTestId("refund-row").WaitFor())
	if got := text(t, admin, "refund-row"); !strings.Contains(got, refunded) || strings.Contains(got, kept) {
		t.Errorf("the refund reads %q, want %s refunded and not %s", got, refunded, kept)
	}
	if got := text(t, admin, "order-status"); got != "Confirmed" {
		t.Errorf("the order is %q after one of two tickets was refunded, want Confirmed", got)
	}
	fitsPhone(t, admin, "the order page with its refunds")
	screenshot(t, admin, "order-desk-refund-en")

	fan := login(t, a, "fan2@boxoffice.test")
	enter(t, a, fan, hall)
	waitSeat(t, fan, kept, ".sold")
	waitSeat(t, fan, refunded, ":not(.sold):not(.held)")
	must(t, "choose the refunded seat", seat(fan, refunded).Click())
	must(t, "hold it", fan.GetByTestId("hold-submit").Click())
	waitSeat(t, fan, refunded, ".mine")

	korean(t, a, admin)
	fitsPhone(t, admin, "the order page with its refunds, in Korean")
	screenshot(t, admin, "order-desk-refund-ko")
	_, err = admin.Goto(fmt.Sprintf("%s/admin/orders?event=%d&q=fan1", a.URL, hall))
	must(t, "search in Korean", err)
	screenshot(t, admin, "order-desk-search-ko")
}
