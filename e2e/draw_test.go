package e2e

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store"
	"github.com/mxschmitt/playwright-go"
)

// A fan in the pre-queue sees the draw ticket and the commitment; after the
// opening the waiting room shows the drawn place, the draw's page the seed,
// and admission leads the fan to the seat map.
func TestQueue_PrequeueDraw(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=500ms")
	id := seedDemo(t, a)
	ctx := context.Background()
	db, err := store.OpenDB(ctx, a.DatabaseURL)
	must(t, "connect to the app's database", err)
	defer db.Close()
	_, err = db.Pool.Exec(ctx, `UPDATE event SET prequeue_opens_at = now() - interval '1 hour', queue_opens_at = now() + interval '1 hour' WHERE id = $1`, id)
	must(t, "open the pre-queue", err)
	room := fmt.Sprintf("%s/events/%d/queue", a.URL, id)

	fan := login(t, a, "fan1@boxoffice.test")
	// The event is cached for a second: the join must find the pre-queue
	// open, as its page says once the cache has the change.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = fan.Goto(fmt.Sprintf("%s/events/%d", a.URL, id))
		must(t, "open the event", err)
		if n, _ := fan.GetByTestId("prequeue-open").Count(); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the event's page never showed the pre-queue open")
		}
		time.Sleep(200 * time.Millisecond)
	}
	must(t, "join", fan.GetByTestId("join-queue").Click())
	waitForURL(t, fan, "wait for the waiting room", room)
	ticket, commitment := text(t, fan, "draw-ticket"), text(t, fan, "draw-commitment")
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(ticket) || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(commitment) {
		t.Fatalf("pre-queue shows ticket %q and commitment %q, want 32 and 64 hex characters", ticket, commitment)
	}
	screenshot(t, fan, "en-queue-prequeue")
	must(t, "phone width", fan.SetViewportSize(390, 844))
	screenshot(t, fan, "en-queue-prequeue-phone")
	must(t, "desktop width", fan.SetViewportSize(1280, 800))

	_, err = db.Pool.Exec(ctx, `UPDATE event SET queue_opens_at = now() - interval '1 second' WHERE id = $1`, id)
	must(t, "open the queue", err)
	// The page reloads itself at the draw; the event is cached for a second.
	deadline = time.Now().Add(20 * time.Second)
	for {
		_, err := fan.Reload()
		must(t, "reload", err)
		// the only fan may be admitted by the tick after the draw: the page
		// then says so and leaves for the seat map
		placed, _ := fan.GetByTestId("queue-position").Count()
		admitted, _ := fan.GetByTestId("queue-admitted").Count()
		if placed > 0 || admitted > 0 || fan.URL() != room {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiting room never showed a place after the opening")
		}
		time.Sleep(300 * time.Millisecond)
	}
	// An admitted fan's waiting room leaves for the seat map by itself,
	// which would abort a navigation of the same page: the draw opens in a
	// page of its own.
	fan, err = fan.Context().NewPage()
	must(t, "open a page for the draw", err)
	_, err = fan.Goto(fmt.Sprintf("%s/events/%d/draw", a.URL, id))
	must(t, "open the draw", err)
	if got := text(t, fan, "draw-ticket"); got != ticket {
		t.Errorf("draw page shows ticket %q, want %q", got, ticket)
	}
	if got := text(t, fan, "draw-place"); got != "1" {
		t.Errorf("draw page shows place %q, want 1 (the only entrant)", got)
	}
	must(t, "seed shown", fan.GetByTestId("draw-seed").WaitFor())
	screenshot(t, fan, "en-draw")
	must(t, "phone width", fan.SetViewportSize(390, 844))
	screenshot(t, fan, "en-draw-phone")
	must(t, "desktop width", fan.SetViewportSize(1280, 800))

	_, err = fan.Goto(room)
	must(t, "back to the waiting room", err)
	waitForURL(t, fan, "admitted to the seat map", fmt.Sprintf("%s/events/%d/seats", a.URL, id), playwright.PageWaitForURLOptions{Timeout: playwright.Float(20000)})
	must(t, "leave button", fan.GetByTestId("leave").WaitFor())
	screenshot(t, fan, "en-seats-leave")
	must(t, "leave the sale", fan.GetByTestId("leave").Click())
	waitForURL(t, fan, "back on the event", fmt.Sprintf("%s/events/%d", a.URL, id))
}
