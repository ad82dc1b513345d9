package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/boxoffice/boxoffice/store"
	"github.com/mxschmitt/playwright-go"
)

// askProof sets the event's proof-of-work difficulty in the app's
// database, as the admin's event form does.
func askProof(t *testing.T, a *app, eventID int64, difficulty int) {
	t.Helper()
	db, err := store.OpenDB(context.Background(), a.DatabaseURL)
	must(t, "open the database", err)
	defer db.Close()
	_, err = db.Pool.Exec(context.Background(), `UPDATE event SET pow_difficulty = $2 WHERE id = $1`, eventID, difficulty)
	must(t, "set pow_difficulty", err)
}

// A fan joins an event that asks a proof of work: the event page's join
// form carries the ALTCHA widget, which solves the challenge when the fan
// presses Join, and the fan lands in the waiting room. A browser without
// JavaScript is told that joining needs it. Admission is paused, so that
// the fan still waits when the waiting room renders: a running admitter
// may admit the only fan between the join and the page, and the page then
// leaves for the seat map.
func TestQueue_JoinWithProofOfWork(t *testing.T) {
	a := startApp(t)
	id := seedDemo(t, a)
	askProof(t, a, id, 2000) // low, so that the test solves fast
	pauseAdmission(t, a, id)
	event, room := fmt.Sprintf("%s/events/%d", a.URL, id), fmt.Sprintf("%s/events/%d/queue", a.URL, id)

	fan := login(t, a, "fan1@boxoffice.test")
	// the event cache keeps what it read for up to a second: reload until
	// the page asks for the proof
	for i := 0; ; i++ {
		_, err := fan.Goto(event)
		must(t, "open the event", err)
		if n, err := fan.Locator("altcha-widget").Count(); err == nil && n == 1 {
			break
		} else if i == 50 {
			t.Fatal("the event page has no ALTCHA widget")
		}
		fan.WaitForTimeout(100)
	}
	screenshot(t, fan, "join-challenge-en")
	must(t, "phone width", fan.SetViewportSize(390, 844))
	screenshot(t, fan, "join-challenge-en-phone")
	must(t, "join", fan.GetByTestId("join-queue").Click())
	waitForURL(t, fan, "wait for the waiting room", room)
	if got := text(t, fan, "queue-position"); got != "1" {
		t.Errorf("the fan who solved the proof is at position %q, want 1", got)
	}

	_, ko := newPageIn(t, "ko-KR")
	_, err := ko.Goto(a.URL + "/login")
	must(t, "open log-in", err)
	must(t, "fill e-mail", ko.Locator(`input[name="email"]`).Fill("fan2@boxoffice.test"))
	must(t, "fill password", ko.Locator(`input[name="password"]`).Fill(demoPassword))
	must(t, "log in", ko.GetByTestId("login-submit").Click())
	waitForURL(t, ko, "wait for home", a.URL+"/")
	_, err = ko.Goto(event)
	must(t, "open the event in Korean", err)
	must(t, "phone width", ko.SetViewportSize(390, 844))
	screenshot(t, ko, "join-challenge-ko-phone")
	must(t, "join in Korean", ko.GetByTestId("join-queue").Click())
	waitForURL(t, ko, "wait for the waiting room in Korean", room)

	bctx, err := browser.NewContext(playwright.BrowserNewContextOptions{JavaScriptEnabled: playwright.Bool(false)})
	must(t, "open a context without JavaScript", err)
	t.Cleanup(func() { bctx.Close() })
	nojs, err := bctx.NewPage()
	must(t, "open a page", err)
	nojs.SetDefaultTimeout(10000)
	_, err = nojs.Goto(a.URL + "/login")
	must(t, "open log-in", err)
	submitLogin(t, nojs, "fan3@boxoffice.test")
	waitForURL(t, nojs, "wait for home", a.URL+"/")
	_, err = nojs.Goto(event)
	must(t, "open the event without JavaScript", err)
	if got := text(t, nojs, "join-challenge-noscript"); got == "" {
		t.Error("a browser without JavaScript is not told that joining needs it")
	}
	screenshot(t, nojs, "join-challenge-nojs")
}
