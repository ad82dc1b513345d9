package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestChaos_RedisLost loses everything in Redis in the middle of a sale, by
// FLUSHALL and by a restart without persistence (DESIGN.md rule 7): the
// service answers again with no restart; no confirmed order, payment,
// ticket or sold seat is lost; fans racing to hold sold seats while the
// sold-seat cache is rebuilt all get seat_taken; the limit still counts
// what was bought; a fan in line is told that the line was reset, live and
// after logging in again, and gets a fresh place; an order created before
// the loss is paid after it with exactly one outcome; and the rules of
// DESIGN.md hold at the end. BOXOFFICE_CHAOS=long runs more fans and
// rounds.
func TestChaos_RedisLost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		lose func(t *testing.T, s *redisChaos)
	}{
		{"Flushall", func(t *testing.T, s *redisChaos) {
			if err := storetest.FlushAll(context.Background(), s.app.Redis); err != nil {
				t.Fatalf("FLUSHALL: %v", err)
			}
		}},
		{"Restart", func(t *testing.T, s *redisChaos) {
			s.redis.Stop()
			wantStatus(t, s.app.newClient(t).do("GET", "/readyz", nil), http.StatusServiceUnavailable)
			s.redis.Start()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fans, rounds := 50, 2
			if storetest.ChaosLong() {
				fans, rounds = 200, 10
			}
			s := newRedisChaos(t, fans)
			for round := range rounds {
				tt.lose(t, s)
				s.waitReady(t)
				if round == 0 {
					s.checkWaiter(t)
				}
				s.attack(t, round)
				if round == 0 {
					s.payUnpaid(t)
				}
			}
			s.checkAfter(t)
		})
	}
}

// redisChaos is a sale on an app whose Redis is a private server, with fans
// in every state a Redis loss can find them in.
type redisChaos struct {
	app   *testApp
	redis *storetest.PrivateRedis
	ev    *boxoffice.Event
	path  string // the event's waiting room

	buyer     *client // bought 4 of the limit of 5
	unpaid    [2]*client
	orders    [2]orderAnswer // unpaid[i]'s orders, created before the loss
	waiter    *client        // in line, following the stream
	stream    <-chan sseEvent
	attackers []*client
	free      []string // seats nobody bought, held or ordered before the loss
	before    []string // the sale's records in PostgreSQL before the loss
}

// Seats of newSeatEvent's event, by what happens to them before the loss.
var (
	chaosBought = [][]string{{"A-1-1", "A-1-2", "A-1-3", "A-1-4"}, {"A-1-5", "A-1-6"}}
	chaosHeld   = []string{"A-2-1", "A-2-2"}
	chaosOrders = [][]string{{"A-3-1", "A-3-2"}, {"A-3-3"}}
)

const chaosPassword = "correct horse"

func newRedisChaos(t *testing.T, fans int) *redisChaos {
	t.Helper()
	ctx := context.Background()
	r := storetest.StartRedis(t)
	rdb, err := store.OpenRedis(ctx, r.URL, "chaos:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	s := &redisChaos{app: newTestAppOn(t, storetest.MustOpenDB(t), rdb), redis: r}
	s.ev = s.app.newSeatEvent(t)
	s.path = fmt.Sprintf("/events/%d/queue", s.ev.ID)

	for i, seats := range chaosBought {
		c, _ := s.app.newFan(t, fmt.Sprintf("buyer%d@example.com", i), s.ev.ID)
		if conf := s.pay(t, c, s.order(t, c, seats...)); conf.Status != string(boxoffice.OrderConfirmed) {
			t.Fatalf("buyer %d's order: %+v, want CONFIRMED", i, conf)
		}
		if i == 0 {
			s.buyer = c
		}
	}
	holder, _ := s.app.newFan(t, "holder@example.com", s.ev.ID)
	hold(t, holder, s.ev.ID, chaosHeld...)
	for i, seats := range chaosOrders {
		s.unpaid[i], _ = s.app.newFan(t, fmt.Sprintf("unpaid%d@example.com", i), s.ev.ID)
		s.orders[i] = s.order(t, s.unpaid[i], seats...)
	}
	s.waiter, _ = s.app.newAccount(t, "waiter@example.com", boxoffice.RoleFan)
	wantStatus(t, s.waiter.do("POST", s.path, url.Values{}), http.StatusSeeOther)
	position(t, s.waiter, s.path+"/status", "waiting", 1)
	_, s.stream = stream(t, s.waiter, s.ev.ID)
	if e := next(t, s.stream); e.name != "position" || testid(fragment(t, e), "queue-position") != "1" {
		t.Fatalf("the waiter's stream begins with %q: %s; want position 1", e.name, e.data)
	}
	for i := range fans {
		email := fmt.Sprintf("attacker%d@example.com", i)
		if _, err := s.app.Srv.Accounts.CreateAccount(ctx, boxoffice.Signup{Email: email, Password: chaosPassword, Name: email}); err != nil {
			t.Fatal(err)
		}
		s.attackers = append(s.attackers, s.app.newClient(t))
	}
	taken := slices.Concat(slices.Concat(chaosBought...), chaosHeld, slices.Concat(chaosOrders...))
	s.free = s.labels(t, `SELECT label FROM event_seat WHERE event_id = $1 AND label <> ALL($2) ORDER BY label`, s.ev.ID, taken)
	s.app.Sandbox.Wait()
	s.before = s.records(t)
	return s
}

// order holds seats for the admitted client and creates the order (JSON).
func (s *redisChaos) order(t *testing.T, c *client, seats ...string) orderAnswer {
	t.Helper()
	hold(t, c, s.ev.ID, seats...)
	resp := c.do("POST", fmt.Sprintf("/events/%d/orders", s.ev.ID), url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusCreated)
	var o orderAnswer
	decodeJSON(t, resp, &o)
	return o
}

// confirmation is the success redirect's JSON answer.
type confirmation struct{ Status, Outcome string }

// pay pays the order at the sandbox PG and follows its success redirect,
// which needs no session, and returns what the confirmation answers.
func (s *redisChaos) pay(t *testing.T, c *client, o orderAnswer) confirmation {
	t.Helper()
	success := s.app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioDefault)
	resp := c.do("GET", success, nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	var conf confirmation
	decodeJSON(t, resp, &conf)
	return conf
}

// waitReady polls /readyz until it answers 200.
func (s *redisChaos) waitReady(t *testing.T) {
	t.Helper()
	c := s.app.newClient(t)
	waitFor(t, "/readyz to answer 200 after the loss", func() bool {
		return c.do("GET", "/readyz", nil).StatusCode == http.StatusOK
	})
}

// checkWaiter checks what the fan in line sees after the loss: the live
// stream says that the line was reset, and so do the waiting room, its
// fragment and its JSON status once the fan, logged out by the loss, logs
// in again; joining again gives a place in a new line.
func (s *redisChaos) checkWaiter(t *testing.T) {
	t.Helper()
	e := next(t, s.stream)
	for ; e.name == "position" && fragment(t, e).Find(`[data-queue-status="waiting"]`).Length() == 1; e = next(t, s.stream) {
	}
	d := fragment(t, e)
	if e.name != "position" || d.Find(`[data-queue-status="reset"][data-queue-final]`).Length() != 1 ||
		!strings.HasPrefix(testid(d, "queue-reset"), "The line was reset.") || testid(d, "rejoin") != "Join again" {
		t.Fatalf("the live stream says %q: %s; want the reset fragment", e.name, e.data)
	}
	if e = next(t, s.stream); e.name != "close" {
		t.Errorf("after the reset the stream sends %q, want close", e.name)
	}

	// Each instance drops its copies of the lost sessions within a second.
	var resp *http.Response
	waitFor(t, "the waiter to be logged out by the loss", func() bool {
		resp = s.waiter.do("GET", s.path, nil)
		return resp.StatusCode != http.StatusOK
	})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/login?next="+url.QueryEscape(s.path) {
		t.Fatalf("the waiter's waiting room after the loss redirects to %q, want the log-in page leading back", loc)
	}
	resp = s.waiter.do("POST", "/login", url.Values{"email": {"waiter@example.com"}, "password": {chaosPassword}, "next": {s.path}})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != s.path {
		t.Fatalf("log-in leads to %q, want the waiting room", loc)
	}
	wantQueueReset(t, s.waiter, s.path)
	wantStatus(t, s.waiter.do("POST", s.path, url.Values{}), http.StatusSeeOther)
	position(t, s.waiter, s.path+"/status", "waiting", 1)
}

// attack logs every attacker and the buyer in again and lets them through
// the waiting room, then, all at once and before any other hold since the
// loss, so while the sold-seat cache is being rebuilt: each attacker tries
// to hold a sold seat (each must get 409 seat_taken), and the buyer, who
// bought 4 of 5, tries from many tabs of one session to hold one free seat
// each, and two in one more tab (exactly one single seat may be held; every
// other tab must get 422 limit_exceeded).
func (s *redisChaos) attack(t *testing.T, round int) {
	t.Helper()
	fans := append([]*client{s.buyer}, s.attackers...)
	emails := make([]string, len(fans))
	emails[0] = "buyer0@example.com"
	for i := range s.attackers {
		emails[i+1] = fmt.Sprintf("attacker%d@example.com", i)
	}
	all(t, len(fans), func(i int) error {
		if err := expect(fans[i], "POST", "/login", url.Values{"email": {emails[i]}, "password": {chaosPassword}}, http.StatusSeeOther, ""); err != nil {
			return err
		}
		return expect(fans[i], "POST", s.path, url.Values{}, http.StatusOK, "")
	})
	s.app.admit(t, boxoffice.AdmissionSettings{EventID: s.ev.ID, Rate: 100_000})

	sold := s.labels(t, `SELECT seat_label FROM sold_seat WHERE event_id = $1 ORDER BY seat_label`, s.ev.ID)
	tabs := s.free[:min(len(s.free), 10)]
	holds := holdsPath(s.ev.ID)
	granted := make([]bool, len(tabs))
	all(t, len(s.attackers)+1+len(tabs), func(i int) error {
		switch {
		case i < len(s.attackers):
			return expect(s.attackers[i], "POST", holds, url.Values{"seat": {sold[i%len(sold)]}}, http.StatusConflict, boxoffice.ESEATTAKEN)
		case i == len(s.attackers):
			return expect(s.buyer, "POST", holds, url.Values{"seat": tabs[:2]}, http.StatusUnprocessableEntity, boxoffice.ELIMITEXCEEDED)
		}
		tab := i - len(s.attackers) - 1
		status, code, err := send(s.buyer, "POST", holds, url.Values{"seat": {tabs[tab]}})
		granted[tab] = status == http.StatusOK
		if err == nil && !granted[tab] && (status != http.StatusUnprocessableEntity || code != boxoffice.ELIMITEXCEEDED) {
			err = fmt.Errorf("the buyer's tab holding %s: %d %q, want 200 or 422 limit_exceeded", tabs[tab], status, code)
		}
		return err
	})
	var won []string
	for i, ok := range granted {
		if ok {
			won = append(won, tabs[i])
		}
	}
	m := getSeatMap(t, s.buyer, s.ev.ID)
	if m.Owned != 4 || len(won) != 1 || !slices.Equal(m.Holds.Seats, won) {
		t.Errorf("round %d: the buyer owns %d and holds %v, its tabs were granted %v; want 4 owned and exactly one seat held", round, m.Owned, m.Holds.Seats, won)
	}
	for _, l := range sold {
		if st := m.statuses()[l]; st != "sold" {
			t.Errorf("round %d: sold seat %s shows %q on the seat map", round, l, st)
		}
	}
}

// payUnpaid pays the two orders created before the loss, whose holds the
// loss ended. Another fan now holds a seat of the first, so its payment is
// refunded (the seat is held by another account); the second is confirmed.
// A repeat of each redirect changes nothing.
func (s *redisChaos) payUnpaid(t *testing.T) {
	t.Helper()
	// The orders' seats are free again: the holds were lost with Redis.
	hold(t, s.attackers[0], s.ev.ID, chaosOrders[0][0])
	hold(t, s.attackers[1], s.ev.ID, chaosHeld[0])
	want := []struct {
		confirmation
		tickets int
	}{
		{confirmation{string(boxoffice.OrderRefunded), string(boxoffice.PaymentRefunded)}, 0},
		{confirmation{string(boxoffice.OrderConfirmed), string(boxoffice.PaymentConfirmed)}, len(chaosOrders[1])},
	}
	for i, o := range s.orders {
		// The fan's session was lost with Redis: it logs in again, as it
		// must to read its order (the success redirect's JSON answers only
		// the order's owner).
		wantStatus(t, s.unpaid[i].do("POST", "/login", url.Values{"email": {fmt.Sprintf("unpaid%d@example.com", i)}, "password": {"correct horse"}}), http.StatusSeeOther)
		success := s.app.payAtSandbox(t, s.unpaid[i], o, "pay", sandbox.ScenarioDefault)
		for range 2 {
			resp := s.unpaid[i].do("GET", success, nil, "Accept: application/json")
			wantStatus(t, resp, http.StatusOK)
			var got confirmation
			decodeJSON(t, resp, &got)
			if got != want[i].confirmation {
				t.Errorf("order %d paid after the loss: %+v, want %+v", i, got, want[i].confirmation)
			}
		}
		s.app.Sandbox.Wait()
		payments := s.app.queryInt(t, `SELECT count(*) FROM payment WHERE order_id = $1`, o.OrderID)
		tickets := s.app.queryInt(t, `SELECT count(*) FROM ticket WHERE order_id = $1`, o.OrderID)
		if payments != 1 || tickets != want[i].tickets {
			t.Errorf("order %d: %d payments and %d tickets, want 1 and %d", i, payments, tickets, want[i].tickets)
		}
	}
}

// checkAfter checks that everything PostgreSQL held before the loss is still
// there, that DESIGN.md's rules hold, and that no sold seat is held in Redis.
func (s *redisChaos) checkAfter(t *testing.T) {
	t.Helper()
	after := s.records(t)
	for _, r := range s.before {
		if !slices.Contains(after, r) {
			t.Errorf("lost with Redis: %s", r)
		}
	}
	for _, q := range []struct{ rule, sql string }{
		{"a seat sold twice", `SELECT seat_label FROM ticket WHERE event_id = $1 GROUP BY seat_label HAVING count(*) > 1`},
		{"an account over the limit", `
			SELECT o.account_id::text FROM ticket t JOIN orders o ON o.id = t.order_id JOIN event e ON e.id = o.event_id
			WHERE o.event_id = $1 GROUP BY o.account_id, e.max_per_account HAVING count(*) > e.max_per_account`},
		{"a bought count that is not the tickets", `
			SELECT p.account_id::text FROM purchase_count p
			WHERE p.event_id = $1 AND p.tickets <> (SELECT count(*) FROM sold_seat s WHERE s.event_id = $1 AND s.account_id = p.account_id)`},
		{"a confirmed order without exactly one confirmed payment of its amount", `
			SELECT o.id FROM orders o WHERE o.event_id = $1 AND o.status = 'CONFIRMED'
			AND (SELECT count(*) FROM payment p WHERE p.order_id = o.id AND p.outcome = 'confirmed' AND p.amount = o.amount) <> 1`},
		{"a confirmed payment of an order that is not confirmed", `
			SELECT o.id FROM orders o JOIN payment p ON p.order_id = o.id
			WHERE o.event_id = $1 AND o.status <> 'CONFIRMED' AND p.outcome = 'confirmed'`},
		{"a sold seat without its ticket in a confirmed order", `
			SELECT s.seat_label FROM sold_seat s LEFT JOIN orders o ON o.id = s.order_id AND o.status = 'CONFIRMED'
			LEFT JOIN ticket t ON t.order_id = o.id AND t.seat_label = s.seat_label
			WHERE s.event_id = $1 AND t.id IS NULL`},
	} {
		if bad := s.labels(t, q.sql, s.ev.ID); len(bad) > 0 {
			t.Errorf("%s: %v", q.rule, bad)
		}
	}
	sold := s.labels(t, `SELECT seat_label FROM sold_seat WHERE event_id = $1`, s.ev.ID)
	if want := len(slices.Concat(chaosBought...)) + len(chaosOrders[1]); len(sold) != want {
		t.Errorf("%d seats sold, want %d", len(sold), want)
	}
	keys := make([]string, len(sold))
	for i, l := range sold {
		keys[i] = s.app.Redis.Key("seat:lock:{%d}:%s", s.ev.ID, l)
	}
	holders, err := s.app.Redis.Client.MGet(context.Background(), keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range holders {
		if h != nil {
			t.Errorf("sold seat %s is held by account %v", sold[i], h)
		}
	}
}

// records lists the sale's confirmed orders, confirmed payments, tickets
// and sold seats in PostgreSQL, one line each.
func (s *redisChaos) records(t *testing.T) []string {
	t.Helper()
	return s.labels(t, `
		SELECT 'order ' || id || ' ' || status || ' ' || amount FROM orders WHERE event_id = $1 AND status = 'CONFIRMED'
		UNION ALL SELECT 'payment ' || p.payment_key || ' ' || p.order_id || ' ' || p.amount FROM payment p
			JOIN orders o ON o.id = p.order_id WHERE o.event_id = $1 AND p.outcome = 'confirmed'
		UNION ALL SELECT 'ticket ' || id || ' ' || order_id || ' ' || seat_label FROM ticket WHERE event_id = $1
		UNION ALL SELECT 'sold ' || seat_label || ' ' || order_id || ' ' || account_id FROM sold_seat WHERE event_id = $1`, s.ev.ID)
}

// labels runs a query that returns one text column.
func (s *redisChaos) labels(t *testing.T, query string, args ...any) []string {
	t.Helper()
	rows, err := s.app.DB.Pool.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// all runs fn(0) to fn(n-1) in goroutines that start at the same moment,
// and reports each error.
func all(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	storetest.AtOnce(n, func(i int) { errs[i] = fn(i) })
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// send sends a request (JSON) from any goroutine and returns the status and
// the error code of the answer ("" if none).
func send(c *client, method, path string, form url.Values) (int, string, error) {
	resp, err := c.try(method, path, form, "Accept: application/json")
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	var body struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Error, nil
}

// expect is send that returns an error unless the answer has status and, if
// code is not "", that error code.
func expect(c *client, method, path string, form url.Values, status int, code string) error {
	got, gotCode, err := send(c, method, path, form)
	if err == nil && (got != status || gotCode != code) {
		err = fmt.Errorf("%s %s %v: %d %q, want %d %q", method, path, form, got, gotCode, status, code)
	}
	return err
}
