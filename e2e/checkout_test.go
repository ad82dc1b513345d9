package e2e

import (
	"context"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/demo"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/views"
	"github.com/mxschmitt/playwright-go"
)

const concertHall = demo.HallName

// priceOf returns the total price of the event's seats, from the app's
// database, in the event's currency.
func priceOf(t *testing.T, a *app, eventID int64, labels ...string) string {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenDB(ctx, a.DatabaseURL)
	must(t, "open the app's database", err)
	defer db.Close()
	ev, err := (&store.Events{DB: db}).FindEventByID(ctx, eventID)
	must(t, "find the event", err)
	seats, err := (&store.Events{DB: db}).EventSeats(ctx, eventID)
	must(t, "event seats", err)
	var total int64
	for _, s := range seats {
		for _, l := range labels {
			if s.Label == l {
				total += s.Price
			}
		}
	}
	return views.Money(boxoffice.NewContextWithLang(ctx, views.English), total, ev.Currency)
}

// holdAndCheckOut chooses the seats on the seat map, holds them, and checks
// out from the hold panel, landing on the sandbox PG's payment page.
func holdAndCheckOut(t *testing.T, a *app, page playwright.Page, labels ...string) {
	t.Helper()
	for _, l := range labels {
		must(t, "choose "+l, seat(page, l).Click())
	}
	must(t, "hold", page.GetByTestId("hold-submit").Click())
	must(t, "wait for the held seats", page.Locator(`[data-testid=held-seats] li`).Nth(len(labels)-1).WaitFor())
	screenshot(t, page, "checkout-held-seats")
	must(t, "check out", page.GetByTestId("checkout").Click())
	waitForURL(t, page, "wait for the PG's page", a.URL+"/sandbox-pg/checkout?**")
}

// The whole journey on the demo concert: log in, join the queue and wait to
// be let in, hold two seats on the seat map, check out, pay on the sandbox
// PG's page, and see the tickets with their QR codes.
func TestCheckout_Journey(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	hall := demoEvents(t, a)[concertHall]
	labels := []string{"1층 C-3-10", "1층 C-3-11"}
	total := priceOf(t, a, hall, labels...)
	page := login(t, a, "fan1@boxoffice.test")
	enter(t, a, page, hall)
	holdAndCheckOut(t, a, page, labels...)

	if got := text(t, page, "pg-amount"); got != total {
		t.Fatalf("the PG asks for %q, want %q", got, total)
	}
	screenshot(t, page, "checkout-sandbox-pg")
	must(t, "pay", page.GetByTestId("pg-pay").Click())

	waitForURL(t, page, "wait for the order page", a.URL+"/orders/**")
	must(t, "wait for the tickets", page.GetByTestId("ticket").Nth(1).WaitFor())
	if got := text(t, page, "order-status"); got != "Confirmed" {
		t.Fatalf("order-status %q, want Confirmed", got)
	}
	if got := text(t, page, "order-amount"); got != total {
		t.Errorf("order-amount %q, want %q", got, total)
	}
	seats, err := page.GetByTestId("ticket").EvaluateAll(`tickets => tickets.map(t => t.dataset.seat).join(",")`)
	must(t, "read the tickets' seats", err)
	if seats != strings.Join(labels, ",") {
		t.Errorf("tickets for %v, want %v", seats, labels)
	}
	loaded, err := page.Evaluate(`() => [...document.querySelectorAll('[data-testid="ticket-qr"]')]
		.every(img => img.complete && img.naturalWidth >= 200)`)
	must(t, "check the QR codes", err)
	if loaded != true {
		t.Error("the tickets' QR code images did not load")
	}
	screenshot(t, page, "order-tickets")

	must(t, "open my orders", page.GetByTestId("my-orders-link").Click())
	must(t, "wait for my orders", page.GetByTestId("orders-row").WaitFor())
	if got := text(t, page, "orders-status"); got != "Confirmed" {
		t.Errorf("my orders shows %q, want Confirmed", got)
	}
}

// A declined payment leaves the order payable, with a way to pay again,
// until its payment window closes; then the page shows it expired.
func TestCheckout_DeclinedUntilExpiry(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms", "PAYMENT_WINDOW=8s")
	hall := demoEvents(t, a)[concertHall]
	page := login(t, a, "fan2@boxoffice.test")
	enter(t, a, page, hall)
	holdAndCheckOut(t, a, page, "1층 C-3-12", "1층 C-3-13")

	must(t, "decline", page.GetByTestId("pg-decline").Click())
	waitForURL(t, page, "wait for the fail page", a.URL+"/payments/fail?**")
	if got := text(t, page, "payment-failed"); !strings.Contains(got, "cancelled the payment") {
		t.Errorf("payment-failed %q, want the cancelled-payment sentence", got)
	}
	if got := text(t, page, "order-status"); got != "Waiting for payment" {
		t.Errorf("order-status %q, want Waiting for payment", got)
	}
	href, err := page.GetByTestId("order-pay").GetAttribute("href")
	must(t, "read the pay link", err)
	if !strings.HasPrefix(href, a.URL+"/sandbox-pg/checkout?") {
		t.Errorf("pay link %q, want the PG's checkout", href)
	}
	screenshot(t, page, "order-declined")

	// The page follows the order (htmx polling) until the window closes.
	must(t, "wait for the expiry", page.GetByTestId("order-expired").WaitFor(playwright.LocatorWaitForOptions{Timeout: playwright.Float(20000)}))
	if got := text(t, page, "order-status"); got != "Expired" {
		t.Errorf("order-status %q, want Expired", got)
	}
	if n, err := page.GetByTestId("order-pay").Count(); err != nil || n != 0 {
		t.Errorf("%d pay links after the expiry (%v), want none", n, err)
	}
	screenshot(t, page, "order-expired")
	openSeatMap(t, a, page, hall) // the seats are free again
	must(t, "wait for no holds", page.GetByTestId("no-holds").WaitFor())
	waitSeat(t, page, "1층 C-3-12", ":not(.held):not(.mine)")
}
