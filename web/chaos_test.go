package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/e2e/invariant"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/boxoffice/boxoffice/views"
)

// chaosEvent is the demo's concert hall event (2,523 seats, 5 per account).
const chaosEvent = 1

// msgServiceDown is what a person sees while PostgreSQL is down, in the
// binary's default language (DEFAULT_LANG, Korean).
var msgServiceDown = views.In(views.Korean, boxoffice.M("err_unavailable"))

// TestChaos_PostgresDown stops PostgreSQL in the middle of a sale, after
// fans paid at the PG and before their browsers came back, and starts it
// again, with the real binary's wiring running in-process (run: the server,
// the expiry, reconciler and outbox workers, the sandbox PG) on a private
// PostgreSQL and the shared Redis under a prefix of its own. Each round:
//
//   - fans are let in, hold seats and create orders: some early, whose
//     orders expire during the outage (PAYMENT_WINDOW), the others just
//     before it;
//   - every fan pays at the sandbox PG (authenticated, 303 to our success
//     page), and nothing of ours settles those payments before the outage
//     (the test holds their orders' rows, which the reconciler and the
//     expiry skip); for some fans the PG's confirm is called directly, as
//     by a process that died before its commit (and no webhook follows);
//     one fan's redirect dies inside the confirmation transaction: the PG
//     has confirmed, the transaction waits on a row lock the test holds,
//     and PostgreSQL stops under it;
//   - while PostgreSQL is down: the success redirect answers 503 with
//     Retry-After and the message (an HTTP client timeout makes a hang
//     fail), /readyz is 503, the PG's webhook gets a 5xx, and holds keep
//     working from Redis, also once the sold-seat cache is due to be merged
//     with PostgreSQL again (the test ends its freshness marker, as five
//     minutes of outage would): rivals hold free seats, and once the early
//     orders' holds expired, a seat of some of those orders;
//   - PostgreSQL starts again; with no restart of the app, the fans who come
//     back see their order settled, and within a bounded wait every payment
//     the PG holds is settled exactly once: confirmed (one payment row, its
//     tickets and sold seats, DONE at the PG with no cancel), or, where a
//     rival took a seat of the expired order, refunded (REFUNDED, nothing
//     sold, exactly one cancel at the PG); the rules of DESIGN.md hold
//     (e2e/invariant), and no payment is counted twice.
//
// The sandbox PG keeps its state in the same database, so the PG is down
// for exactly as long as PostgreSQL is, which a real PG would not be: no
// confirm and no webhook can happen during the outage, and the sandbox's
// webhooks wait for its database. The test plays the PG's webhook itself
// during the outage to see the 5xx that makes a PG retry. What a real PG
// adds, confirming while we cannot record it, is the crashed-process case,
// which the test sets up before the outage (the PG's confirm called
// directly, or the transaction killed by the outage).
func TestChaos_PostgresDown(t *testing.T) {
	p := chaosParams{fans: 21, rounds: 1, window: 10 * time.Second, outage: 2 * time.Second}
	if storetest.ChaosLong() {
		p = chaosParams{fans: 210, rounds: 3, window: 40 * time.Second, outage: 15 * time.Second}
	}
	s := startChaosSale(t, p)
	for round := range p.rounds {
		s.round(round)
		if t.Failed() {
			break
		}
	}
	s.checkInvariants()
}

// chaosParams sizes the test: fans per round (plus a rival per fan whose
// seat is taken and the fan whose transaction dies), rounds, the payment
// window (PAYMENT_WINDOW, and the event's hold TTL: holds that outlive the
// outage, as 5-minute holds outlive a minute's), and the least time
// PostgreSQL stays down.
type chaosParams struct {
	fans, rounds   int
	window, outage time.Duration
}

// chaosRole is what a fan does and what must become of its payment.
type chaosRole int

const (
	roleRetry      chaosRole = iota // comes back during the outage (503) and after it: CONFIRMED
	roleGone                        // never comes back: the reconciler confirms
	roleCrashed                     // the PG confirmed, the process died before its commit, no webhook: the reconciler confirms
	roleLateRetry                   // ordered early (expires during the outage), comes back during and after it: CONFIRMED late
	roleLateGone                    // ordered early, never comes back: confirmed late by the reconciler
	roleTakenRetry                  // ordered early; a rival holds one of its seats once it expired; comes back: REFUNDED
	roleTakenGone                   // the same, never comes back: refunded by the reconciler
	chaosRoles                      // the number of roles above, which the fans take in turn
	roleMidway                      // its confirmation transaction dies with PostgreSQL: CONFIRMED after
	roleRival                       // holds during the outage, buys after it: CONFIRMED
)

func (r chaosRole) early() bool   { return r >= roleLateRetry && r <= roleTakenGone }
func (r chaosRole) taken() bool   { return r == roleTakenRetry || r == roleTakenGone }
func (r chaosRole) returns() bool { return r == roleRetry || r == roleLateRetry || r == roleTakenRetry }

// chaosFan is one fan: a browser with its cookies, and what it bought.
type chaosFan struct {
	role      chaosRole
	accountID int64
	email     string
	browser   *http.Client
	seats     []string
	orderID   string
	checkout  url.Values // the PG checkout's fields, from checkout_url
	success   string     // the PG's success redirect
	key       string     // the payment key
}

// chaosSale is the app under test and the test's own view of its database.
type chaosSale struct {
	t         *testing.T
	p         chaosParams
	pg        *storetest.PrivatePostgres
	db        *store.DB
	rdb       *store.Redis // the app's keys, under its REDIS_PREFIX
	base      string
	transport *http.Transport
	client    *http.Client // the operator's and the PG's, without cookies
	logs      *syncBuffer
	seats     []string // the event's seats, handed out in order
}

const chaosPassword = "correct horse"

// startChaosSale starts a private PostgreSQL with the demo data and the app
// on it, stopped when t ends.
func startChaosSale(t *testing.T, p chaosParams) *chaosSale {
	ctx := context.Background()
	pg := storetest.StartPostgres(t)
	db := pg.MustOpenDB()
	if _, err := demo.Seed(ctx, db, demo.Options{Password: chaosPassword, BcryptCost: 4}); err != nil {
		t.Fatal(err)
	}
	// A hold lasts a payment window, so that checkout keeps it exactly to
	// the order's expiry, as the defaults do (5-minute holds, 10-minute
	// window): once an order expired, its seats are free in Redis even
	// while PostgreSQL is down.
	if _, err := db.Pool.Exec(ctx, `UPDATE event SET hold_ttl_seconds = $2 WHERE id = $1`, chaosEvent, int(p.window/time.Second)); err != nil {
		t.Fatal(err)
	}
	s := &chaosSale{t: t, p: p, pg: pg, db: db, logs: &syncBuffer{},
		transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	s.client = &http.Client{Transport: s.transport, Timeout: 30 * time.Second}
	t.Cleanup(s.transport.CloseIdleConnections)
	rows, err := db.Pool.Query(ctx, `SELECT label FROM event_seat WHERE event_id = $1 ORDER BY label`, chaosEvent)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		s.seats = append(s.seats, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	// The app's own pool: the private server's URL caps it at 4 for tests
	// that share a server; the app gets its default.
	appURL, _ := url.Parse(pg.URL)
	q := appURL.Query()
	q.Del("pool_max_conns")
	appURL.RawQuery = q.Encode()
	s.rdb = storetest.MustOpenRedis(t) // its keys are deleted after the app stopped
	port := freePort(t)
	s.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, nil, env(map[string]string{
			"ADDR": fmt.Sprintf("127.0.0.1:%d", port), "DATABASE_URL": appURL.String(),
			"REDIS_URL": storetest.RedisURL(), "REDIS_PREFIX": s.rdb.Prefix,
			"ADMISSION_TICK": "100ms", "RATE_LIMITS": "off", "LOG_LEVEL": "warn",
			"PAYMENT_WINDOW": p.window.String(), "RECONCILE_INTERVAL": "1s",
		}), io.Discard, s.logs)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run after cancel = %v, want a clean shutdown", err)
		}
		if t.Failed() {
			t.Logf("the app's log (warnings and errors):\n%s", s.logs.tail(64<<10))
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := s.client.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the app did not become ready")
		}
	}
	return s
}

// round plays one outage: fans, orders, payments, PostgreSQL down, checks,
// PostgreSQL up, recovery.
func (s *chaosSale) round(round int) {
	t := s.t
	fans := s.newFans(round)
	var early, fresh, rivals, buyers []*chaosFan
	var midway *chaosFan
	for _, f := range fans {
		switch {
		case f.role == roleRival:
			rivals = append(rivals, f)
			continue
		case f.role == roleMidway:
			midway = f
		case f.role.early():
			early = append(early, f)
		default:
			fresh = append(fresh, f)
		}
		buyers = append(buyers, f)
	}
	if !s.each(fans, "let in", s.admit) {
		return
	}
	checkout := func(f *chaosFan) error {
		if err := s.hold(f, f.seats...); err != nil {
			return err
		}
		return s.order(f)
	}
	// Early orders expire during the outage; the others are made half a
	// window later, so that they are still payable when PostgreSQL is back.
	earlyAt := time.Now()
	if !s.each(early, "hold and order", checkout) {
		return
	}
	time.Sleep(time.Until(earlyAt.Add(s.p.window / 2)))
	if !s.each(append(fresh, midway), "hold and order", checkout) {
		return
	}
	// Nothing of ours may settle these payments before the outage: the
	// reconciler and the expiry skip the orders another transaction holds,
	// and the test holds them from before the payments until PostgreSQL
	// stops.
	paid := append(early, fresh...)
	ids := make([]string, len(paid))
	for i, f := range paid {
		ids[i] = f.orderID
	}
	release, err := s.lockRows(`SELECT 1 FROM orders WHERE id = ANY($1) FOR NO KEY UPDATE`, ids)
	if err != nil {
		t.Fatalf("round %d: lock the orders: %v", round, err)
	}
	defer release()
	if !s.each(paid, "pay", s.pay) {
		return
	}
	if err := s.payMidwayAndStop(midway); err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	stoppedAt := time.Now()

	// PostgreSQL is down, and stays down past the sold-seat cache's TTL.
	ready := s.rdb.Key("cache:ready:{%d}", chaosEvent)
	if err := s.rdb.Client.Del(context.Background(), ready).Err(); err != nil {
		t.Fatalf("round %d: expire the sold-seat cache: %v", round, err)
	}
	var returning []*chaosFan
	for _, f := range buyers {
		if f.role.returns() {
			returning = append(returning, f)
		}
	}
	s.each(returning, "come back during the outage", s.comeBackDuringOutage)
	s.checkDown(fresh[0])
	s.each(rivals, "hold a seat of an expired order during the outage", s.takeSeat)
	s.each(rivals, "hold a free seat during the outage", func(f *chaosFan) error { return s.hold(f, f.seats[0]) })
	time.Sleep(time.Until(stoppedAt.Add(s.p.outage)))
	if n := s.rdb.Client.Exists(context.Background(), ready).Val(); n != 0 {
		t.Errorf("round %d: the sold-seat cache was loaded while PostgreSQL was down", round)
	}
	down := time.Since(stoppedAt)
	s.pg.Start()
	upAt := time.Now()

	// PostgreSQL is back: the fans who come back see their orders settled;
	// the rivals buy what they held.
	s.each(returning, "come back", func(f *chaosFan) error {
		want := boxoffice.OrderConfirmed
		if f.role.taken() {
			want = boxoffice.OrderRefunded
		}
		return s.wantSettled(f, want)
	})
	s.each(rivals, "buy", func(f *chaosFan) error {
		if err := s.order(f); err != nil {
			return err
		}
		if err := s.pay(f); err != nil {
			return err
		}
		return s.wantSettled(f, boxoffice.OrderConfirmed)
	})
	s.waitSettled(fans)
	t.Logf("round %d: %d fans, %d rivals; PostgreSQL down for %v; every payment settled %v after it came back",
		round, len(buyers), len(rivals), down.Round(time.Millisecond), time.Since(upAt).Round(time.Millisecond))
	s.checkPayments(fans)
}

// newFans makes the round's accounts: p.fans fans in turn of role, a rival
// for each fan whose seat is taken, and the fan whose transaction dies;
// each with seats of its own (one or two; two for the taken ones, one of
// which goes to the rival, who also holds a free one).
func (s *chaosSale) newFans(round int) []*chaosFan {
	ctx := context.Background()
	accounts := &store.Accounts{DB: s.db, Cost: 4}
	take := func(n int) []string {
		out := s.seats[:n]
		s.seats = s.seats[n:]
		return out
	}
	var fans []*chaosFan
	add := func(role chaosRole, seats []string) *chaosFan {
		f := &chaosFan{role: role, email: fmt.Sprintf("chaos-%d-%d@boxoffice.test", round, len(fans)), seats: seats}
		a, err := accounts.CreateAccount(ctx, boxoffice.Signup{Email: f.email, Password: chaosPassword, Name: "Chaos fan", Role: boxoffice.RoleFan})
		if err != nil {
			s.t.Fatal(err)
		}
		jar, _ := cookiejar.New(nil)
		f.accountID = a.ID
		f.browser = &http.Client{Jar: jar, Transport: s.transport, Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		fans = append(fans, f)
		return f
	}
	for i := range s.p.fans {
		role := chaosRole(i % int(chaosRoles))
		switch {
		case role.taken():
			f := add(role, take(2))
			add(roleRival, []string{take(1)[0], f.seats[0]})
		default:
			add(role, take(1+i%2))
		}
	}
	add(roleMidway, take(1))
	return fans
}

// each runs fn for every fan at once and reports whether all succeeded,
// failing the test with the first few errors otherwise.
func (s *chaosSale) each(fans []*chaosFan, what string, fn func(*chaosFan) error) bool {
	s.t.Helper()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, f := range fans {
		wg.Go(func() {
			if err := fn(f); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s (%s): %w", f.email, roleName[f.role], err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		s.t.Errorf("%s: %d of %d fans failed, e.g.:\n  %v", what, len(errs), len(fans), errors.Join(errs[:min(len(errs), 3)]...))
		return false
	}
	return true
}

var roleName = map[chaosRole]string{
	roleRetry: "comes back", roleGone: "never comes back", roleCrashed: "crashed after the PG's confirm",
	roleLateRetry: "late, comes back", roleLateGone: "late, never comes back", roleTakenRetry: "seat taken, comes back",
	roleTakenGone: "seat taken, never comes back", roleMidway: "transaction dies", roleRival: "rival",
}

// call sends a request as the fan: form, if any, urlencoded; Accept JSON if
// asJSON. It returns the answer with its body read.
func (s *chaosSale) call(f *chaosFan, method, target string, form url.Values, asJSON bool) (*http.Response, []byte, error) {
	if strings.HasPrefix(target, "/") {
		target = s.base + target
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		return nil, nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if asJSON {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := f.browser.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// want sends a request asking for JSON and checks its status; into, if
// set, receives the answer. The answer is returned whenever there is one.
func (s *chaosSale) want(f *chaosFan, status int, method, target string, form url.Values, into any) (*http.Response, error) {
	resp, body, err := s.call(f, method, target, form, true)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", method, target, err)
	case resp.StatusCode != status:
		return resp, fmt.Errorf("%s %s: status %d, want %d: %.300s", method, target, resp.StatusCode, status, body)
	case into != nil:
		if err := json.Unmarshal(body, into); err != nil {
			return resp, fmt.Errorf("%s %s: %w: %.300s", method, target, err, body)
		}
	}
	return resp, nil
}

// admit logs the fan in, joins the queue and waits until the admitter lets
// the fan in.
func (s *chaosSale) admit(f *chaosFan) error {
	if _, err := s.want(f, http.StatusSeeOther, "POST", "/login", url.Values{"email": {f.email}, "password": {chaosPassword}}, nil); err != nil {
		return err
	}
	path := fmt.Sprintf("/events/%d/queue", chaosEvent)
	var st struct{ Status string }
	if _, err := s.want(f, http.StatusOK, "POST", path, url.Values{}, &st); err != nil {
		return err
	}
	for deadline := time.Now().Add(60 * time.Second); st.Status != "admitted"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("not let in after a minute: %q", st.Status)
		}
		if _, err := s.want(f, http.StatusOK, "GET", path+"/status", nil, &st); err != nil {
			return err
		}
	}
	return nil
}

// hold holds seats for the fan.
func (s *chaosSale) hold(f *chaosFan, seats ...string) error {
	var held struct{ Held []string }
	if _, err := s.want(f, http.StatusOK, "POST", fmt.Sprintf("/events/%d/holds", chaosEvent), url.Values{"seat": seats}, &held); err != nil {
		return err
	}
	if len(held.Held) != len(seats) {
		return fmt.Errorf("held %v, want %v", held.Held, seats)
	}
	return nil
}

// order creates the fan's order of its holds (answered 503 while
// PostgreSQL reconnects, it tries again).
func (s *chaosSale) order(f *chaosFan) error {
	var o struct {
		OrderID     string `json:"order_id"`
		CheckoutURL string `json:"checkout_url"`
	}
	err := until503Ends(func() (*http.Response, error) {
		return s.want(f, http.StatusCreated, "POST", fmt.Sprintf("/events/%d/orders", chaosEvent), url.Values{}, &o)
	})
	if err != nil {
		return err
	}
	u, err := url.Parse(o.CheckoutURL)
	if err != nil {
		return err
	}
	f.orderID, f.checkout = o.OrderID, u.Query()
	return nil
}

// pay pays at the sandbox PG's checkout, keeping its success redirect
// without following it. A crashed fan's payment is then confirmed at the PG
// as our confirmation would, by a process that dies before its commit; the
// scenario sends no webhook, so only the reconciler can find it.
func (s *chaosSale) pay(f *chaosFan) error {
	form := url.Values{"action": {"pay"}, "scenario": {sandbox.ScenarioDefault}}
	if f.role == roleCrashed {
		form.Set("scenario", sandbox.ScenarioWebhookNever)
	}
	for k, v := range f.checkout {
		form[k] = v
	}
	resp, err := s.want(f, http.StatusSeeOther, "POST", "/sandbox-pg/checkout", form, nil)
	if err != nil {
		return err
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Path != "/payments/success" {
		return fmt.Errorf("the PG redirected to %q, want /payments/success", resp.Header.Get("Location"))
	}
	f.success, f.key = loc.String(), loc.Query().Get("paymentKey")
	if f.role == roleCrashed {
		var amount int64
		fmt.Sscan(f.checkout.Get("amount"), &amount)
		pg := &toss.Client{BaseURL: s.base + "/sandbox-pg", SecretKey: devSandboxKey}
		if _, err := pg.Confirm(context.Background(), f.key, f.orderID, boxoffice.Money{Amount: amount, Currency: f.checkout.Get("currency")}); err != nil {
			return fmt.Errorf("confirm at the PG: %w", err)
		}
	}
	return nil
}

// payMidwayAndStop pays for the midway fan's order and follows its
// redirect while the test holds the fan's purchase_count row, so that the
// confirmation transaction, which locks that row after the PG confirmed the
// payment, waits; then it stops PostgreSQL under it. The redirect must
// answer 503 once PostgreSQL is gone.
func (s *chaosSale) payMidwayAndStop(f *chaosFan) error {
	ctx := context.Background()
	if err := s.pay(f); err != nil {
		return err
	}
	release, err := s.lockRows(`SELECT 1 FROM purchase_count WHERE event_id = $1 AND account_id = $2 FOR UPDATE`, chaosEvent, f.accountID)
	if err != nil {
		return err
	}
	defer release()
	redirected := make(chan error, 1)
	go func() { redirected <- s.comeBackDuringOutage(f) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var done, waiting bool
		err := s.db.Pool.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM sandbox_pg.sandbox_pg_payment WHERE payment_key = $1 AND status = 'DONE'),
			EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')`,
			f.key).Scan(&done, &waiting)
		if err != nil {
			return err
		}
		if done && waiting {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the redirect's confirmation never waited on the lock (PG confirmed: %v)", done)
		}
	}
	s.pg.Stop()
	if err := <-redirected; err != nil {
		return fmt.Errorf("the redirect whose transaction died: %w", err)
	}
	return nil
}

// lockRows locks rows with query (a SELECT ... FOR ...) in a transaction
// of the test's own, until release or until PostgreSQL stops.
func (s *chaosSale) lockRows(query string, args ...any) (release func(), err error) {
	ctx := context.Background()
	conn, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, query, args...)
	}
	release = func() {
		if tx != nil {
			tx.Rollback(ctx)
		}
		conn.Release()
	}
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// comeBackDuringOutage follows the fan's success redirect as a browser
// would while PostgreSQL is down: 503, Retry-After, the message.
func (s *chaosSale) comeBackDuringOutage(f *chaosFan) error {
	resp, body, err := s.call(f, "GET", f.success, nil, false)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		return fmt.Errorf("success redirect: status %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return err
	}
	if msg := strings.TrimSpace(doc.Find(`[data-testid="error-message"]`).Text()); msg != msgServiceDown {
		return fmt.Errorf("success redirect says %q, want %q", msg, msgServiceDown)
	}
	return nil
}

// checkDown checks the operator's view and the PG's webhook while
// PostgreSQL is down: /readyz 503; a webhook of f's payment 5xx, JSON.
func (s *chaosSale) checkDown(f *chaosFan) {
	t := s.t
	resp, err := s.client.Get(s.base + "/readyz")
	if err != nil {
		t.Errorf("/readyz: %v", err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz with PostgreSQL down = %d, want 503", resp.StatusCode)
	}
	body, _ := json.Marshal(toss.WebhookEvent{
		EventType: toss.EventPaymentStatusChanged,
		CreatedAt: time.Now().Format(toss.WebhookCreatedAtLayout),
		Data:      boxoffice.Payment{PaymentKey: f.key, OrderID: f.orderID, Status: boxoffice.PaymentStatusDone},
	})
	resp, err = s.client.Post(s.base+"/payments/webhook", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Errorf("webhook: %v", err)
		return
	}
	defer resp.Body.Close()
	var answer struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&answer)
	if resp.StatusCode < 500 || answer.Error != boxoffice.EUNAVAILABLE {
		t.Errorf("webhook with PostgreSQL down = %d %q, want 5xx %q so that the PG retries", resp.StatusCode, answer.Error, boxoffice.EUNAVAILABLE)
	}
}

// takeSeat holds, for a rival, the seat of a fan whose order was made
// early: refused (409) while that order's holds last, held once they expired
// during the outage.
func (s *chaosSale) takeSeat(f *chaosFan) error {
	seat := f.seats[1]
	for deadline := time.Now().Add(2 * s.p.window); ; time.Sleep(200 * time.Millisecond) {
		resp, body, err := s.call(f, "POST", fmt.Sprintf("/events/%d/holds", chaosEvent), url.Values{"seat": {seat}}, true)
		switch {
		case err != nil:
			return err
		case resp.StatusCode == http.StatusOK:
			return nil
		case resp.StatusCode != http.StatusConflict:
			return fmt.Errorf("hold %s: status %d: %.300s", seat, resp.StatusCode, body)
		case time.Now().After(deadline):
			return fmt.Errorf("hold %s: still taken two payment windows after the order", seat)
		}
	}
}

// wantSettled follows the fan's success redirect after the outage (again
// while it answers 503), then reads the order until it is settled, and
// wants it in status want.
func (s *chaosSale) wantSettled(f *chaosFan, want boxoffice.OrderStatus) error {
	err := until503Ends(func() (*http.Response, error) {
		resp, _, err := s.call(f, "GET", f.success, nil, false)
		if err == nil && resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusServiceUnavailable {
			err = fmt.Errorf("success redirect: status %d, want 303", resp.StatusCode)
		}
		return resp, err
	})
	if err != nil {
		return err
	}
	var o struct{ Status boxoffice.OrderStatus }
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := until503Ends(func() (*http.Response, error) {
			return s.want(f, http.StatusOK, "GET", "/orders/"+f.orderID, nil, &o)
		})
		if err != nil {
			return err
		}
		if o.Status != boxoffice.OrderPendingPayment && o.Status != boxoffice.OrderExpired {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("order still %s a minute after the outage", o.Status)
		}
	}
	if o.Status != want {
		return fmt.Errorf("order %s, want %s", o.Status, want)
	}
	return nil
}

// until503Ends calls fn again while it answers 503 (PostgreSQL reconnects),
// for up to a minute, and returns its last error.
func until503Ends(fn func() (*http.Response, error)) error {
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, err := fn()
		if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still 503 a minute after PostgreSQL came back: %w", err)
		}
	}
}

// waitSettled waits, up to two minutes, until the payment of every fan of
// the round is recorded confirmed or refunded and no webhook of the
// sandbox PG is left to deliver.
func (s *chaosSale) waitSettled(fans []*chaosFan) {
	start := time.Now()
	keys := make([]string, len(fans))
	for i, f := range fans {
		keys[i] = f.key
	}
	var unsettled, undelivered int
	for deadline := start.Add(2 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
		err := s.db.Pool.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM unnest($1::text[]) k WHERE NOT EXISTS (
				SELECT 1 FROM payment p WHERE p.payment_key = k AND p.outcome IN ('confirmed', 'refunded'))),
			(SELECT count(*) FROM sandbox_pg.sandbox_pg_webhook WHERE delivered_at IS NULL)`, keys).Scan(&unsettled, &undelivered)
		if err == nil && unsettled == 0 && undelivered == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("two minutes after the outage: %d payments unsettled, %d webhooks undelivered (%v)", unsettled, undelivered, err)
		}
	}
}

// checkPayments checks each payment of the round: settled once, as its
// fan's role says, in our database and at the PG.
func (s *chaosSale) checkPayments(fans []*chaosFan) {
	for _, f := range fans {
		var outcome, status, failure, pgStatus string
		var tickets, sold, items, cancels, outbox, rows int
		err := s.db.Pool.QueryRow(context.Background(), `
			SELECT p.outcome, o.status, o.failure_code, sp.status, jsonb_array_length(sp.cancels),
				(SELECT count(*) FROM ticket t WHERE t.order_id = o.id),
				(SELECT count(*) FROM sold_seat ss WHERE ss.order_id = o.id),
				(SELECT count(*) FROM order_item i WHERE i.order_id = o.id),
				(SELECT count(*) FROM outbox x WHERE x.payload->>'order_id' = o.id),
				(SELECT count(*) FROM payment q WHERE q.order_id = o.id)
			FROM payment p JOIN orders o ON o.id = p.order_id JOIN sandbox_pg.sandbox_pg_payment sp ON sp.payment_key = p.payment_key
			WHERE p.payment_key = $1`, f.key).
			Scan(&outcome, &status, &failure, &pgStatus, &cancels, &tickets, &sold, &items, &outbox, &rows)
		if err != nil {
			s.t.Errorf("%s (%s): payment %s: %v", f.email, roleName[f.role], f.key, err)
			continue
		}
		got := fmt.Sprintf("%s/%s %q, PG %s with %d cancels, %d of %d seats sold with %d tickets, %d outbox rows, %d payments",
			outcome, status, failure, pgStatus, cancels, sold, items, tickets, outbox, rows)
		want := fmt.Sprintf("confirmed/CONFIRMED \"\", PG DONE with 0 cancels, %d of %d seats sold with %d tickets, 1 outbox rows, 1 payments",
			items, items, items)
		if f.role.taken() {
			want = fmt.Sprintf("refunded/REFUNDED %q, PG CANCELED with 1 cancels, 0 of %d seats sold with 0 tickets, 0 outbox rows, 1 payments",
				boxoffice.ReasonSeatTaken, items)
		}
		if got != want {
			s.t.Errorf("%s (%s): %s\n  want %s", f.email, roleName[f.role], got, want)
		}
	}
}

// checkInvariants checks the rules of DESIGN.md on the whole event
// (e2e/invariant, in PostgreSQL and Redis), then what an outage could break
// besides, each query counting the rows that break a rule: a payment
// counted twice (tickets, outbox rows, bought counts), and what the PG holds
// against what we recorded: money taken only for a sale, refunded once
// otherwise.
func (s *chaosSale) checkInvariants() {
	ctx := context.Background()
	for _, r := range invariant.Check(ctx, s.db, s.rdb, chaosEvent) {
		if !r.OK {
			s.t.Errorf("%s: %s", r.Name, r.Detail)
		}
	}
	checks := []struct{ rule, sql string }{
		{"each confirmed order has a sold seat per item and one outbox row", `
			SELECT count(*) FROM orders o WHERE o.event_id = $1 AND o.status = 'CONFIRMED' AND (
			       (SELECT count(*) FROM sold_seat s WHERE s.order_id = o.id) <> (SELECT count(*) FROM order_item i WHERE i.order_id = o.id)
			    OR (SELECT count(*) FROM outbox x WHERE x.payload->>'order_id' = o.id) <> 1)`},
		{"no confirmed payment, ticket or outbox row outside a confirmed order", `
			SELECT (SELECT count(*) FROM payment p JOIN orders o ON o.id = p.order_id WHERE o.event_id = $1 AND p.outcome = 'confirmed' AND o.status <> 'CONFIRMED')
			     + (SELECT count(*) FROM ticket t JOIN orders o ON o.id = t.order_id WHERE t.event_id = $1 AND o.status <> 'CONFIRMED')
			     + (SELECT count(*) FROM outbox x JOIN orders o ON o.id = x.payload->>'order_id' WHERE o.event_id = $1 AND o.status <> 'CONFIRMED')`},
		{"each account's bought count is its tickets", `
			SELECT count(*) FROM purchase_count c WHERE c.event_id = $1
			AND c.tickets <> (SELECT count(*) FROM ticket t JOIN orders o ON o.id = t.order_id WHERE t.event_id = $1 AND o.account_id = c.account_id)`},
		{"the PG and we agree: DONE is confirmed, CANCELED is refunded once, nothing else was confirmed at the PG", `
			SELECT count(*) FROM sandbox_pg.sandbox_pg_payment sp LEFT JOIN payment p ON p.payment_key = sp.payment_key
			WHERE sp.order_id IN (SELECT id FROM orders WHERE event_id = $1) AND NOT (
			       sp.status = 'DONE' AND p.outcome = 'confirmed' AND jsonb_array_length(sp.cancels) = 0
			    OR sp.status = 'CANCELED' AND p.outcome = 'refunded' AND jsonb_array_length(sp.cancels) = 1)`},
	}
	for _, c := range checks {
		var bad int
		if err := s.db.Pool.QueryRow(ctx, c.sql, chaosEvent).Scan(&bad); err != nil {
			s.t.Errorf("%s: %v", c.rule, err)
		} else if bad != 0 {
			s.t.Errorf("%s: %d rows break it", c.rule, bad)
		}
	}
	if strings.Contains(s.logs.String(), `"msg":"panic"`) {
		s.t.Error("the app logged a panic")
	}
}

// syncBuffer is an io.Writer for the app's log, safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail returns the last n bytes of the log.
func (b *syncBuffer) tail(n int) string {
	s := b.String()
	return s[max(0, len(s)-n):]
}
