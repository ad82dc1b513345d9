package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/store"
	"github.com/redis/go-redis/v9"
)

// redisTrips counts the Redis round trips sent with a context that carries
// it (withTrips): a command, or a pipeline or MULTI/EXEC of them, is one
// round trip. The handshake of a connection the pool opens for the request
// (see handshake) is not counted: whether the request finds an idle
// connection depends on what else uses the pool at that moment, not on the
// request. It is safe for concurrent use.
type redisTrips struct {
	mu    sync.Mutex
	trips [][]string // the commands of each round trip, MULTI and EXEC left out
}

type tripsKey struct{}

// sessionRead names the GET of a session from Redis.
const sessionRead = "get session"

func withTrips(ctx context.Context, t *redisTrips) context.Context {
	return context.WithValue(ctx, tripsKey{}, t)
}

func (r *redisTrips) add(cmds []redis.Cmder) {
	if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return !handshake(c) }) {
		return
	}
	var names []string
	for _, c := range cmds {
		switch n := c.Name(); {
		case n == "multi" || n == "exec" || handshake(c):
		case n == "get" && strings.Contains(fmt.Sprint(c.Args()...), "session:"):
			names = append(names, sessionRead)
		default:
			names = append(names, n)
		}
	}
	r.mu.Lock()
	r.trips = append(r.trips, names)
	r.mu.Unlock()
}

// handshake reports whether cmd is one of those go-redis sends, through
// the client's hooks and with the request's context, when it opens a
// connection before the request's own commands: HELLO or AUTH, then a
// pipeline of SELECT, READONLY and CLIENT SETNAME, TRACKING or
// MAINT_NOTIFICATIONS, then one of CLIENT SETINFO. No request of the box
// office sends any of them itself.
func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "select", "readonly", "client":
		return true
	}
	return false
}

// take returns the round trips counted since the last take.
func (r *redisTrips) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.trips
	r.trips = nil
	return out
}

// tripHook hands each command or pipeline to the redisTrips of its context.
type tripHook struct{}

func (tripHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (tripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if r, ok := ctx.Value(tripsKey{}).(*redisTrips); ok {
			r.add([]redis.Cmder{cmd})
		}
		return next(ctx, cmd)
	}
}
func (tripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if r, ok := ctx.Value(tripsKey{}).(*redisTrips); ok {
			r.add(cmds)
		}
		return next(ctx, cmds)
	}
}

// metric returns the sum of the values of the app's metric named name.
func (a *testApp) metric(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := a.Srv.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// copyWatch excuses the session reads that a drop of the instance's
// session copies explains, and no other. When the instance drops every copy
// (boxoffice_session_copy_drops_total grows: a ping late on a loaded
// machine), a fan's session is read from Redis again, which is right, and
// not only in the request under way: the drop may come after that
// request's lookup, and while the ping is late no read is copied. So from
// the drop on, each request may read the session once, until one finds it
// in the copy again (no session read, and no drop during the request).
// Without a drop, a session read is never excused. Not safe for concurrent
// use.
type copyWatch struct {
	app   *testApp
	drops float64 // the drops counted when the last request ended
	gone  bool    // a drop since a request last found the session copied
}

// watchCopy starts a copyWatch; call it before a request that finds the
// session in the copy.
func (a *testApp) watchCopy(t *testing.T) *copyWatch {
	t.Helper()
	return &copyWatch{app: a, drops: a.metric(t, "boxoffice_session_copy_drops_total")}
}

// excuse returns got, the round trips of the request that just ended,
// without its session read when a drop explains it.
func (w *copyWatch) excuse(t *testing.T, got [][]string) [][]string {
	t.Helper()
	dropped := false
	if now := w.app.metric(t, "boxoffice_session_copy_drops_total"); now > w.drops {
		w.drops, w.gone, dropped = now, true, true
	}
	if !w.gone {
		return got
	}
	if i := slices.IndexFunc(got, func(trip []string) bool { return slices.Equal(trip, []string{sessionRead}) }); i >= 0 {
		return slices.Delete(slices.Clone(got), i, i+1)
	}
	w.gone = dropped
	return got
}

// copiedSession asks path as c until a request costs no Redis round trip:
// the instance has seen c's session (its first request reads it from
// Redis, and one that races the log-in's own message is not copied), as in
// the steady state of a sale. It returns the watch of the copy's drops from
// then on.
func (a *testApp) copiedSession(t *testing.T, c *client, path string) *copyWatch {
	t.Helper()
	var w *copyWatch
	waitFor(t, "the session in the instance's copy", func() bool {
		w = a.watchCopy(t)
		a.Trips.take()
		wantStatus(t, c.do("GET", path, nil), http.StatusOK)
		return len(a.Trips.take()) == 0
	})
	return w
}

// tripStep is a request of a round-trip test and the round trips it
// should cost.
type tripStep struct {
	name, method, path string
	form               url.Values
	headers            []string
	status             int
	want               [][]string // the round trips and their commands
}

// The headers of a JSON and of an htmx request, and the round trips of a
// script and of a read-only one.
var (
	asJSON, htmx = []string{"Accept: application/json"}, []string{"HX-Request: true"}
	evalsha      = [][]string{{"evalsha"}}
	positions    = [][]string{{"evalsha_ro"}}
)

// runTrips sends each step as c and fails the test when a step answers
// another status or costs other round trips than it wants (less the
// session read that a drop of the copy, which w watches, explains).
func (a *testApp) runTrips(t *testing.T, c *client, w *copyWatch, steps []tripStep) {
	t.Helper()
	for _, s := range steps {
		a.Trips.take()
		resp := c.do(s.method, s.path, s.form, s.headers...)
		wantStatus(t, resp, s.status)
		got := w.excuse(t, a.Trips.take())
		if !slices.EqualFunc(got, s.want, slices.Equal) {
			t.Errorf("%s: %d round trips %v, want %d: %v", s.name, len(got), got, len(s.want), s.want)
		}
	}
}

// frozenClock fixes the store's clock (store.Redis.Now), so that the
// instance's shared per-tick figures and the seat map's shared read stay
// fresh for the whole test and each request's round trips are the same on
// every run.
func frozenClock(s *handlers.Server) {
	at := time.Now()
	s.Queue.(*store.Queue).Redis.Now = func() time.Time { return at }
}

// Every hot request of a sale costs at most one Redis round trip once the
// instance has seen the fan's session (the steady state), counted through
// the real handler stack by a go-redis hook: the session comes from the
// instance's copy, the entry token is checked in the action's own script
// or MULTI, and a poll of a fan still waiting is answered from the
// instance's per-tick figures. The counts are exact, so that a change that
// adds a round trip or a command to a hot request fails here.
func TestRoundTrips_HotRequests(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, frozenClock, plainScripts)
	app.Redis.Client.AddHook(tripHook{})
	e := app.newSeatEvent(t)
	id := e.ID
	event, queue := fmt.Sprintf("/events/%d", id), fmt.Sprintf("/events/%d/queue", id)
	waitFor(t, "the session store to copy sessions", app.Sessions.Copying)

	// A first fan goes through every request once, so that the scripts are
	// loaded into Redis (EVALSHA, not EVAL) and the sold-seat cache and the
	// seat map's shared read are there, as in the steady state of a sale.
	warm, _ := app.newFan(t, "warm@example.com", id)
	hold(t, warm, id, "A-1-1")
	warm.do("DELETE", holdsPath(id)+"/A-1-1", nil, "Accept: application/json")
	resp := warm.do("POST", holdsPath(id), url.Values{"grade": {"S"}, "quantity": {"1"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	var best bestJSON
	decodeJSON(t, resp, &best)
	warm.do("DELETE", holdsPath(id)+"/"+url.PathEscape(best.Held[0]), nil, "Accept: application/json")
	getSeatMap(t, warm, id)
	warm.do("GET", queue+"/status", nil, "Accept: application/json")

	fan, acct := app.newAccount(t, "fan@example.com", boxoffice.RoleFan)
	// Steady state: the instance has seen the session. Its first request
	// reads it from Redis (a round trip), and one that races the log-in's
	// own message is not copied: ask until one costs nothing.
	copied := app.copiedSession(t, fan, event)

	statuses := [][]string{{"get", "zscore", "time", "exists", "get", "hget", "zrange", "hgetall"}}
	entry := [][]string{{"evalsha_ro"}}
	run := func(t *testing.T, fan *client, steps []tripStep) {
		t.Helper()
		app.runTrips(t, fan, copied, steps)
	}

	run(t, fan, []tripStep{
		{"the event page", "GET", event, nil, nil, http.StatusOK, nil},
		{"join", "POST", queue, url.Values{}, asJSON, http.StatusOK, evalsha},
		{"join again", "POST", queue, url.Values{}, asJSON, http.StatusOK, evalsha},
		{"position status of a fan waiting (JSON)", "GET", queue + "/status", nil, asJSON, http.StatusOK, nil},
		{"position status of a fan waiting (htmx)", "GET", queue + "/status", nil, htmx, http.StatusOK, nil},
		{"waiting room", "GET", queue, nil, nil, http.StatusOK, nil},
	})
	// A proof of work costs no round trip of its own: it is taken in the
	// join's script, and a join without one is refused before Redis.
	app.askProof(t, id, 10)
	proof := solve(t, challenge(t, fan, id))
	run(t, fan, []tripStep{
		{"join with a proof of work (JSON)", "POST", queue, url.Values{"altcha": {proof}}, asJSON, http.StatusOK, evalsha},
		{"join with a used proof (JSON)", "POST", queue, url.Values{"altcha": {proof}}, asJSON, http.StatusForbidden, evalsha},
		{"join without a proof (JSON)", "POST", queue, url.Values{}, asJSON, http.StatusPreconditionRequired, nil},
	})
	app.askProof(t, id, 0)
	if r := app.admit(t, boxoffice.AdmissionSettings{EventID: id, Rate: 1000, TokenTTL: 10 * time.Minute}); !slices.Contains(r.Admitted, acct.ID) {
		t.Fatalf("admitted %v, want the fan", r.Admitted)
	}
	run(t, fan, []tripStep{
		{"position status of a fan admitted (JSON)", "GET", queue + "/status", nil, asJSON, http.StatusOK, positions},
		{"position status of a fan admitted (htmx)", "GET", queue + "/status", nil, htmx, http.StatusOK, positions},
		{"seat statuses", "GET", seatsPath(id) + "/status", nil, asJSON, http.StatusOK, statuses},
		{"seat map page", "GET", seatsPath(id), nil, nil, http.StatusOK, entry},
		{"hold panel (htmx)", "GET", seatsPath(id), nil, htmx, http.StatusOK, statuses},
		{"list of a section's seats", "GET", seatsPath(id) + "?section=A", nil, nil, http.StatusOK, statuses},
		{"seat map (JSON)", "GET", seatsPath(id), nil, asJSON, http.StatusOK, statuses},
		{"hold (JSON)", "POST", holdsPath(id), url.Values{"seat": {"A-2-1", "A-2-2"}}, asJSON, http.StatusOK, evalsha},
		{"hold (htmx)", "POST", holdsPath(id), url.Values{"seat": {"A-2-3"}}, htmx, http.StatusOK, evalsha},
		{"hold of a seat already held (JSON)", "POST", holdsPath(id), url.Values{"seat": {"A-2-1"}}, asJSON, http.StatusOK, evalsha},
		{"best available (JSON)", "POST", holdsPath(id), url.Values{"grade": {"S"}, "quantity": {"2"}}, asJSON, http.StatusOK, evalsha},
		{"release (JSON)", "DELETE", holdsPath(id) + "/A-2-1", nil, asJSON, http.StatusOK, evalsha},
		{"release (htmx)", "DELETE", holdsPath(id) + "/A-2-2", nil, htmx, http.StatusOK, evalsha},
		{"entry time", "GET", event + "/entry", nil, asJSON, http.StatusOK, entry},
	})
	etag := fan.do("GET", seatsPath(id), nil).Header.Get("ETag")
	run(t, fan, []tripStep{
		{"seat map page, warm (304)", "GET", seatsPath(id), nil, []string{"If-None-Match: " + etag}, http.StatusNotModified, entry},
	})

	// A fan without an entry is refused in the same single round trip.
	stranger, _ := app.newAccount(t, "stranger@example.com", boxoffice.RoleFan)
	copied = app.copiedSession(t, stranger, event)
	app.Trips.take()
	wantStatus(t, stranger.do("POST", holdsPath(id), url.Values{"seat": {"A-3-1"}}, "Accept: application/json"), http.StatusForbidden)
	if got := copied.excuse(t, app.Trips.take()); !slices.EqualFunc(got, evalsha, slices.Equal) {
		t.Errorf("a hold without an entry: round trips %v, want %v", got, evalsha)
	}

	// Sold out: a fan in line is told so from the tick's figures, before
	// and after joining again (the join keeps the place in the cookie).
	// TestRoundTrips_SoldOutJoin has the fan who joins after the sell-out.
	run(t, stranger, []tripStep{
		{"join", "POST", queue, url.Values{}, asJSON, http.StatusOK, evalsha},
	})
	app.admit(t, boxoffice.AdmissionSettings{EventID: id, Rate: 1, SoldOut: true})
	app.Trips.take()
	stranger.do("GET", queue+"/status", nil, "Accept: application/json") // the first poll after a tick reads its figures
	run(t, stranger, []tripStep{
		{"position status of a fan in line, sold out (JSON)", "GET", queue + "/status", nil, asJSON, http.StatusOK, nil},
		{"join again, sold out", "POST", queue, url.Values{}, asJSON, http.StatusOK, evalsha},
		{"position status of a fan in line after joining again, sold out (JSON)", "GET", queue + "/status", nil, asJSON, http.StatusOK, nil},
		{"position status of a fan in line, sold out (htmx)", "GET", queue + "/status", nil, htmx, http.StatusOK, nil},
	})
}

// A fan who joins a sold-out event, every seat blocked, is placed nowhere
// in the join's one round trip, and its status costs the one read that
// finds it neither in line nor admitted, as the status of any fan without
// a place does; telling it sold out adds none (the event is the cached one
// the status reads anyway).
func TestRoundTrips_SoldOutJoin(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, frozenClock, plainScripts)
	app.Redis.Client.AddHook(tripHook{})
	ev := app.saleEvent(t) // A-1-1 to A-1-10
	event, queue := fmt.Sprintf("/events/%d", ev.ID), fmt.Sprintf("/events/%d/queue", ev.ID)
	waitFor(t, "the session store to copy sessions", app.Sessions.Copying)
	blocks := url.Values{"action": {"block"}, "seat": {"A-1-1, A-1-2, A-1-3, A-1-4, A-1-5, A-1-6, A-1-7, A-1-8, A-1-9, A-1-10"}}
	wantStatus(t, app.newAdmin(t).do("POST", fmt.Sprintf("/admin/events/%d/blocks", ev.ID), blocks), http.StatusSeeOther)
	app.tick(t, ev.ID)
	// A first fan loads the scripts into Redis (EVALSHA, not EVAL).
	warm, _ := app.newAccount(t, "warm@example.com", boxoffice.RoleFan)
	warm.do("POST", queue, url.Values{}, "Accept: application/json")
	warm.do("GET", queue+"/status", nil, "Accept: application/json")

	fan, _ := app.newAccount(t, "fan@example.com", boxoffice.RoleFan)
	app.runTrips(t, fan, app.copiedSession(t, fan, event), []tripStep{
		{"join, sold out", "POST", queue, url.Values{}, asJSON, http.StatusOK, evalsha},
		{"position status of a fan not in line, sold out (JSON)", "GET", queue + "/status", nil, asJSON, http.StatusOK, positions},
		{"position status of a fan not in line, sold out (htmx)", "GET", queue + "/status", nil, htmx, http.StatusOK, positions},
	})
}

// The waiting room's stream costs its fans nothing per tick: each instance
// reads the positions of all its fans of an event in one round trip per
// tick, and opening a stream costs no round trip in the steady state.
func TestRoundTrips_StreamTick(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, plainScripts)
	app.Redis.Client.AddHook(tripHook{})
	ev := app.openEvent(t)
	// A first read loads the positions script into Redis, so that each
	// tick's read is one EVALSHA_RO.
	if _, err := app.Srv.Queue.Positions(context.Background(), ev.ID, map[int64]string{1: ""}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session store to copy sessions", app.Sessions.Copying)
	var bodies []func()
	var streams []<-chan sseEvent
	for i := range 3 {
		c, _ := app.joinedFan(t, ev.ID, fmt.Sprintf("streamer%d@example.com", i))
		copied := app.copiedSession(t, c, fmt.Sprintf("/events/%d", ev.ID))
		app.Trips.take()
		resp, ch := stream(t, c, ev.ID)
		if got := copied.excuse(t, app.Trips.take()); len(got) != 0 {
			t.Errorf("opening a stream: round trips %v, want none", got)
		}
		bodies = append(bodies, func() { resp.Body.Close() })
		streams = append(streams, ch)
	}
	defer func() {
		for _, close := range bodies {
			close()
		}
	}()
	app.TickTrips.take()
	for range 3 { // three ticks' fragments on every stream
		for _, ch := range streams {
			if e := next(t, ch); e.name != "position" {
				t.Fatalf("stream event %q, want position", e.name)
			}
		}
	}
	trips := app.TickTrips.take()
	if len(trips) < 2 {
		t.Fatalf("%d per-tick reads while every stream got three fragments, want one per tick", len(trips))
	}
	for _, trip := range trips {
		if want := []string{"evalsha_ro"}; !slices.Equal(trip, want) {
			t.Errorf("a tick's read sent %v, want one round trip of %v for all %d fans", trip, want, len(streams))
		}
	}
}
