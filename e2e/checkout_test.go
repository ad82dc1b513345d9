package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/boxoffice/boxoffice/views"
	"github.com/playwright-community/playwright-go"
)

// sale is the demo event of an app, with the app's stores, through which
// the test holds seats as the seat map would.
type sale struct {
	app   *app
	db    *store.DB
	holds *store.Holds
	event *boxoffice.Event
}

// seedSale seeds the demo (the binary's seed-demo) and opens the app's
// PostgreSQL and Redis (its key prefix).
func seedSale(t *testing.T, a *app) *sale {
	t.Helper()
	id := seedDemo(t, a)
	ctx := context.Background()
	db, err := store.OpenDB(ctx, a.DatabaseURL)
	must(t, "open the app's database", err)
	t.Cleanup(db.Close)
	rdb, err := store.OpenRedis(ctx, storetest.RedisURL(), a.RedisPrefix)
	must(t, "open the app's Redis", err)
	t.Cleanup(func() { rdb.Close() })
	holds, err := store.NewHolds(db, rdb, nil)
	must(t, "holds", err)
	ev, err := (&store.Events{DB: db}).FindEventByID(ctx, id)
	must(t, "find the demo event", err)
	return &sale{app: a, db: db, holds: holds, event: ev}
}

// enter logs the demo fan n in, joins the event's queue from the event
// page and waits in the waiting room until the admitter lets the fan in
// (the page moves on to the seat map). It returns the page and the account.
func (s *sale) enter(t *testing.T, n int) (playwright.Page, int64) {
	t.Helper()
	email := fmt.Sprintf("fan%d@boxoffice.test", n)
	page := login(t, s.app, email)
	_, err := page.Goto(fmt.Sprintf("%s/events/%d", s.app.URL, s.event.ID))
	must(t, "open the event", err)
	must(t, "join", page.GetByTestId("join-queue").Click())
	must(t, "wait for the waiting room", page.WaitForURL(fmt.Sprintf("%s/events/%d/queue", s.app.URL, s.event.ID)))
	must(t, "wait to be let in", page.WaitForURL(fmt.Sprintf("%s/events/%d/seats", s.app.URL, s.event.ID)))
	var id int64
	must(t, "account id", s.db.Pool.QueryRow(context.Background(), `SELECT id FROM account WHERE email = $1`, email).Scan(&id))
	return page, id
}

// holdSeats holds the first n free seats of the event for the account, as
// the seat map would, and returns them with their total price.
func (s *sale) holdSeats(t *testing.T, accountID int64, n int) ([]string, int64) {
	t.Helper()
	ev := s.event
	ctx := context.Background()
	seats, err := (&store.Events{DB: s.db}).EventSeats(ctx, ev.ID)
	must(t, "event seats", err)
	var labels []string
	var total int64
	for _, seat := range seats[:n] {
		labels = append(labels, seat.Label)
		total += seat.Price
	}
	req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: accountID, Limit: ev.MaxPerAccount, TTL: ev.HoldTTL}
	_, err = s.holds.Hold(ctx, req, labels)
	must(t, "hold seats", err)
	return labels, total
}

// checkOut posts the checkout form from an app page, as the seat map's
// checkout button does, and waits for the sandbox PG's payment page.
func (s *sale) checkOut(t *testing.T, page playwright.Page) {
	t.Helper()
	_, err := page.Goto(fmt.Sprintf("%s/events/%d", s.app.URL, s.event.ID))
	must(t, "open the event", err)
	_, err = page.Evaluate(fmt.Sprintf(`() => {
		const f = document.createElement("form");
		f.method = "post";
		f.action = "/events/%d/orders";
		document.body.appendChild(f);
		f.submit();
	}`, s.event.ID))
	must(t, "check out", err)
	must(t, "wait for the PG's page", page.WaitForURL(s.app.URL+"/sandbox-pg/checkout?**"))
}

// The whole journey on the demo event: log in, join the queue and wait to
// be let in, hold two seats, check out, pay on the sandbox PG's page, and
// see the tickets with their QR codes.
func TestCheckout_Journey(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=200ms")
	s := seedSale(t, a)
	ev := s.event
	page, acct := s.enter(t, 1)
	labels, total := s.holdSeats(t, acct, 2)

	s.checkOut(t, page)
	if got, want := text(t, page, "pg-amount"), views.Money(total, ev.Currency); got != want {
		t.Fatalf("the PG asks for %q, want %q", got, want)
	}
	screenshot(t, page, "checkout-sandbox-pg")
	must(t, "pay", page.GetByTestId("pg-pay").Click())

	must(t, "wait for the order page", page.WaitForURL(a.URL+"/orders/**"))
	must(t, "wait for the tickets", page.GetByTestId("ticket").Nth(1).WaitFor())
	if got := text(t, page, "order-status"); got != "Confirmed" {
		t.Fatalf("order-status %q, want Confirmed", got)
	}
	if got, want := text(t, page, "order-amount"), views.Money(total, ev.Currency); got != want {
		t.Errorf("order-amount %q, want %q", got, want)
	}
	seats, err := page.GetByTestId("ticket-seat").AllTextContents()
	must(t, "read the tickets' seats", err)
	if strings.Join(seats, ",") != strings.Join(labels, ",") {
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
	s := seedSale(t, a)
	ev := s.event
	page, acct := s.enter(t, 2)
	s.holdSeats(t, acct, 2)

	s.checkOut(t, page)
	must(t, "decline", page.GetByTestId("pg-decline").Click())
	must(t, "wait for the fail page", page.WaitForURL(a.URL+"/payments/fail?**"))
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
	labels, _, err := s.holds.MyHolds(context.Background(), ev.ID, acct)
	must(t, "read holds", err)
	if len(labels) != 0 {
		t.Errorf("holds after the expiry %v, want released", labels)
	}
}
