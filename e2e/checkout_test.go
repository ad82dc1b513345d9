package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/boxoffice/boxoffice/views"
	"github.com/playwright-community/playwright-go"
	"golang.org/x/crypto/bcrypt"
)

const demoPassword = "demo-password-e2e"

// sale is the demo seeded into an app's database, with the app's stores.
type sale struct {
	app    *app
	db     *store.DB
	redis  *store.Redis
	queue  *store.Queue
	holds  *store.Holds
	events []*boxoffice.Event
}

// seedSale seeds the demo (demo.Seed) into the app's database and opens the
// app's PostgreSQL and Redis (its key prefix) for the test to drive the
// waiting room and the holds directly.
func seedSale(t *testing.T, a *app) *sale {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenDB(ctx, a.DatabaseURL)
	must(t, "open the app's database", err)
	t.Cleanup(db.Close)
	res, err := demo.Seed(ctx, db, demo.Options{Password: demoPassword, BcryptCost: bcrypt.MinCost})
	must(t, "seed the demo", err)
	if res.Skipped != "" || len(res.Events) == 0 {
		t.Fatalf("demo seed skipped: %s", res.Skipped)
	}
	rdb, err := store.OpenRedis(ctx, storetest.RedisURL(), a.RedisPrefix)
	must(t, "open the app's Redis", err)
	t.Cleanup(func() { rdb.Close() })
	holds, err := store.NewHolds(db, rdb, nil)
	must(t, "holds", err)
	return &sale{app: a, db: db, redis: rdb, queue: &store.Queue{Redis: rdb}, holds: holds, events: res.Events}
}

// logIn logs the page in as the demo fan n and returns the account id.
func (s *sale) logIn(t *testing.T, page playwright.Page, n int) int64 {
	t.Helper()
	email := fmt.Sprintf(demo.FanEmail, n)
	_, err := page.Goto(s.app.URL + "/login")
	must(t, "open log-in", err)
	must(t, "fill e-mail", page.GetByLabel("E-mail").Fill(email))
	must(t, "fill password", page.GetByLabel("Password").Fill(demoPassword))
	must(t, "log in", page.GetByTestId("login-submit").Click())
	must(t, "wait for home", page.WaitForURL(s.app.URL+"/"))
	var id int64
	must(t, "account id", s.db.Pool.QueryRow(context.Background(), `SELECT id FROM account WHERE email = $1`, email).Scan(&id))
	return id
}

// admit puts the page's fan through the event's waiting room: it joins with
// the browser session's key and waits until admitted, admitting ticks itself
// (the app's own admitter, where it runs, may be first; either is fine).
func (s *sale) admit(t *testing.T, page playwright.Page, eventID, accountID int64) {
	t.Helper()
	ctx := context.Background()
	sid := s.sessionKey(t, page)
	_, err := s.queue.Join(ctx, eventID, accountID, sid)
	must(t, "join the queue", err)
	settings := boxoffice.AdmissionSettings{EventID: eventID, Rate: 100, TokenTTL: 10 * time.Minute}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, _, err := s.queue.EntryToken(ctx, eventID, accountID, sid); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the fan was not admitted within 10 s")
		}
		_, err := s.queue.Admit(ctx, settings, boxoffice.TickIndex(time.Now(), time.Second), time.Second)
		must(t, "admit", err)
	}
}

// sessionKey reads the browser session's key ("sid"), to which entry tokens
// are bound, from the app's session store in Redis.
func (s *sale) sessionKey(t *testing.T, page playwright.Page) string {
	t.Helper()
	cookies, err := page.Context().Cookies(s.app.URL)
	must(t, "read cookies", err)
	for _, c := range cookies {
		if c.Name != "boxoffice_session" {
			continue
		}
		b, err := s.redis.Client.Get(context.Background(), s.redis.Key("session:%s", c.Value)).Bytes()
		must(t, "read the session", err)
		_, values, err := scs.GobCodec{}.Decode(b)
		must(t, "decode the session", err)
		return values["sid"].(string)
	}
	t.Fatal("the browser has no session cookie")
	return ""
}

// holdSeats holds the first n free seats of the event for the account, as
// the seat map would, and returns them with their total price.
func (s *sale) holdSeats(t *testing.T, ev *boxoffice.Event, accountID int64, n int) ([]string, int64) {
	t.Helper()
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
func (s *sale) checkOut(t *testing.T, page playwright.Page, eventID int64) {
	t.Helper()
	_, err := page.Goto(fmt.Sprintf("%s/events/%d", s.app.URL, eventID))
	must(t, "open the event", err)
	_, err = page.Evaluate(fmt.Sprintf(`() => {
		const f = document.createElement("form");
		f.method = "post";
		f.action = "/events/%d/orders";
		document.body.appendChild(f);
		f.submit();
	}`, eventID))
	must(t, "check out", err)
	must(t, "wait for the PG's page", page.WaitForURL(s.app.URL+"/sandbox-pg/checkout?**"))
}

// The whole journey on the demo event: log in, join and be admitted, hold
// two seats, check out, pay on the sandbox PG's page, and see the tickets
// with their QR codes.
func TestCheckout_Journey(t *testing.T) {
	a := startApp(t)
	s := seedSale(t, a)
	ev := s.events[0]
	page := newPage(t)
	acct := s.logIn(t, page, 1)
	s.admit(t, page, ev.ID, acct)
	labels, total := s.holdSeats(t, ev, acct, 2)

	s.checkOut(t, page, ev.ID)
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
	a := startApp(t, "PAYMENT_WINDOW=8s")
	s := seedSale(t, a)
	ev := s.events[1]
	page := newPage(t)
	acct := s.logIn(t, page, 2)
	s.admit(t, page, ev.ID, acct)
	s.holdSeats(t, ev, acct, 2)

	s.checkOut(t, page, ev.ID)
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
