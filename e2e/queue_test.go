package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/mxschmitt/playwright-go"
)

const demoPassword = "e2e-demo-password"

// seedDemo runs the binary's seed-demo on the app's database and returns
// the id of the first event on sale (its queue open).
func seedDemo(t *testing.T, a *app) int64 {
	t.Helper()
	cmd := exec.Command(binary, "seed-demo", "--password", demoPassword)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+a.DatabaseURL, "LOG_LEVEL=warn")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("seed-demo: %v\n%s", err, out)
	}
	req, _ := http.NewRequest("GET", a.URL+"/", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, "list events", err)
	defer resp.Body.Close()
	var body struct {
		Events []struct{ ID int64 } `json:"events"`
	}
	must(t, "decode events", json.NewDecoder(resp.Body).Decode(&body))
	if len(body.Events) == 0 {
		t.Fatal("the demo has no event on sale")
	}
	return body.Events[0].ID
}

// login logs a new browser page in.
func login(t *testing.T, a *app, email string) playwright.Page {
	t.Helper()
	page := newPage(t)
	_, err := page.Goto(a.URL + "/login")
	must(t, "open log-in", err)
	submitLogin(t, page, email)
	waitForURL(t, page, "wait for home", a.URL+"/")
	return page
}

// logInWithLang logs page (of the browser context bctx) in as email, then
// sets the language cookie to lang, as the language menu does.
func logInWithLang(t *testing.T, a *app, bctx playwright.BrowserContext, page playwright.Page, email, lang string) {
	t.Helper()
	_, err := page.Goto(a.URL + "/login")
	must(t, "open log-in", err)
	submitLogin(t, page, email)
	waitForURL(t, page, "wait for home", a.URL+"/")
	must(t, "choose "+lang, bctx.AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: lang, URL: playwright.String(a.URL)}}))
}

// submitLogin fills in the log-in form on page and sends it.
func submitLogin(t *testing.T, page playwright.Page, email string) {
	t.Helper()
	must(t, "fill e-mail", page.GetByLabel("E-mail").Fill(email))
	must(t, "fill password", page.GetByLabel("Password").Fill(demoPassword))
	must(t, "log in", page.GetByTestId("login-submit").Click())
}

// pauseAdmission logs the admin in and pauses the event's admission from
// its live page, which the returned page shows.
func pauseAdmission(t *testing.T, a *app, eventID int64) playwright.Page {
	t.Helper()
	admin := login(t, a, "admin@boxoffice.test")
	_, err := admin.Goto(fmt.Sprintf("%s/admin/events/%d/live", a.URL, eventID))
	must(t, "open the live page", err)
	must(t, "pause", admin.GetByTestId("pause").Click())
	must(t, "wait for resume", admin.GetByTestId("resume").WaitFor())
	return admin
}

// Two fans join a paused sale; the admin sets the rate to one fan per tick
// and resumes from the live page; the second fan watches the line move
// over SSE and lands on the seat map without reloading. The first fan's
// browser cannot open the stream: its page falls back to polling the
// status, and gets there too.
func TestQueue_TwoFansAdmittedLive(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=500ms")
	id := seedDemo(t, a)
	room := fmt.Sprintf("%s/events/%d/queue", a.URL, id)
	seats := fmt.Sprintf("%s/events/%d/seats", a.URL, id)

	admin := pauseAdmission(t, a, id)
	// 1 fan/s at 500 ms ticks: a fan every other tick, so that the second
	// fan's page has two pushes in which to show nobody ahead.
	must(t, "fill rate", admin.GetByTestId("rate-input").Fill("1"))
	must(t, "set rate", admin.GetByTestId("set-rate").Click())
	must(t, "wait for the rate", admin.Locator(`[data-testid="live-rate"]:text-is("1/s")`).WaitFor())

	var fans []playwright.Page
	var polls atomic.Int64 // status polls of the first fan's page
	for i := 1; i <= 2; i++ {
		fan := login(t, a, fmt.Sprintf("fan%d@boxoffice.test", i))
		if i == 1 {
			must(t, "block the stream", fan.Route("**/queue/stream", func(r playwright.Route) { r.Abort() }))
			fan.OnRequest(func(r playwright.Request) {
				if strings.Contains(r.URL(), "/queue/status") {
					polls.Add(1)
				}
			})
		}
		_, err := fan.Goto(fmt.Sprintf("%s/events/%d", a.URL, id))
		must(t, "open the event", err)
		must(t, "join", fan.GetByTestId("join-queue").Click())
		waitForURL(t, fan, "wait for the waiting room", room)
		if got := text(t, fan, "queue-position"); got != fmt.Sprint(i) {
			t.Fatalf("fan %d is at position %s, want %d", i, got, i)
		}
		fans = append(fans, fan)
	}
	second := fans[1]
	must(t, "wait for the paused notice", second.GetByTestId("queue-paused").WaitFor())
	screenshot(t, second, "queue-waiting-room")
	// Note in the tab's sessionStorage, which outlives navigation, if this
	// very document (no reload) ever shows nobody ahead.
	loaded, err := second.Evaluate(`() => {
		const loaded = String(performance.timeOrigin);
		new MutationObserver(() => {
			const el = document.querySelector('[data-testid="queue-ahead"]');
			if (el && el.textContent.trim() === "0") sessionStorage.setItem("boNobodyAhead", loaded);
		}).observe(document.body, {subtree: true, childList: true, characterData: true});
		return loaded;
	}`)
	must(t, "watch the page", err)

	must(t, "resume", admin.GetByTestId("resume").Click())
	must(t, "wait for the pause button", admin.GetByTestId("pause").WaitFor())

	waitForURL(t, fans[0], "first fan reaches the seat map", seats)
	if polls.Load() == 0 {
		t.Error("the first fan got to the seat map without polling, though its stream was blocked")
	}
	waitForURL(t, second, "second fan reaches the seat map", seats)
	seen, err := second.Evaluate(`() => sessionStorage.getItem("boNobodyAhead")`)
	must(t, "read what the page showed", err)
	if seen != loaded {
		t.Errorf("the waiting room loaded at %v showed nobody ahead in the page loaded at %v, want the same page (pushed, no reload)", loaded, seen)
	}

	must(t, "wait for both admitted", admin.Locator(`[data-testid="live-admitted"]:text-is("2")`).WaitFor())
	if got := text(t, admin, "live-waiting"); got != "0" {
		t.Errorf("the live page shows %s in line, want 0", got)
	}
	screenshot(t, admin, "queue-admin-live")
}

// Redis loses everything (as a restart without persistence would) while a
// fan waits in a paused line: the open waiting room says at once that the
// line was reset; the fan, logged out by the loss, reloads, logs in and
// lands back in the waiting room, which says the same; Join again gives a
// place in the new line.
func TestQueue_ResetAfterRedisLost(t *testing.T) {
	a := startApp(t, "ADMISSION_TICK=500ms")
	id := seedDemo(t, a)
	room := fmt.Sprintf("%s/events/%d/queue", a.URL, id)
	pauseAdmission(t, a, id)

	fan := login(t, a, "fan1@boxoffice.test")
	_, err := fan.Goto(fmt.Sprintf("%s/events/%d", a.URL, id))
	must(t, "open the event", err)
	must(t, "join", fan.GetByTestId("join-queue").Click())
	waitForURL(t, fan, "wait for the waiting room", room)
	// Mark the rendered state, and wait for the stream to replace it.
	_, err = fan.Evaluate(`() => document.querySelector('[data-testid="queue-state"]').dataset.boRendered = "1"`)
	must(t, "mark the state", err)
	must(t, "wait for a pushed state", fan.Locator(`[data-testid="queue-state"]:not([data-bo-rendered])`).WaitFor())

	rdb := storetest.MustOpenRedis(t)
	keys, err := storetest.Keys(context.Background(), rdb, a.RedisPrefix+"*")
	must(t, "list the app's Redis keys", err)
	must(t, "delete the app's Redis keys", storetest.DeleteKeys(context.Background(), rdb, keys))

	must(t, "wait for the reset", fan.GetByTestId("queue-reset").WaitFor())
	if got := text(t, fan, "queue-reset"); !strings.HasPrefix(got, "The line was reset.") {
		t.Errorf("the live waiting room says %q, want that the line was reset", got)
	}
	screenshot(t, fan, "queue-reset-live")

	// The instance drops its in-process session copies when its next check
	// (store.SessionCheckEvery) sees that Redis lost its data; a reload
	// before that check may still find the fan logged in.
	loginPage := a.URL + "/login?next=" + url.QueryEscape(fmt.Sprintf("/events/%d/queue", id))
	for tries := 0; fan.URL() != loginPage; tries++ {
		if tries == 10 {
			t.Fatalf("Redis lost the session, yet reloading the waiting room %d times still led to %s, not the log-in page", tries, fan.URL())
		}
		time.Sleep(store.SessionCheckEvery)
		_, err = fan.Reload()
		must(t, "reload", err)
	}
	submitLogin(t, fan, "fan1@boxoffice.test")
	waitForURL(t, fan, "back in the waiting room", room)
	if got := text(t, fan, "queue-reset"); !strings.HasPrefix(got, "The line was reset.") {
		t.Errorf("after log-in the waiting room says %q, want that the line was reset", got)
	}
	screenshot(t, fan, "queue-reset-after-login")

	must(t, "join again", fan.GetByTestId("rejoin").Click())
	must(t, "wait for a place", fan.Locator(`[data-testid="queue-position"]:text-is("1")`).WaitFor())
}
