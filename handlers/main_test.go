package handlers_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/boxoffice/boxoffice/views"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// testApp is a Server on real PostgreSQL and Redis behind httptest, with
// the sandbox PG mounted under /sandbox-pg.
type testApp struct {
	*httptest.Server
	DB    *store.DB
	Redis *store.Redis
	Srv   *handlers.Server
	// Stop cancels the server's Stopping context, as a shutdown does.
	Stop     context.CancelFunc
	Orders   *store.Orders
	Checkout *checkout.Service
	Sandbox  *sandbox.Sandbox
	PG       *toss.Client // the sandbox's API, as the app calls it
	// Sessions is the session store, whose in-process copy runs.
	Sessions *store.Sessions
	// Trips counts the Redis round trips of requests, and TickTrips those
	// of the waiting room's per-tick reads, once countTrips added the hook.
	Trips, TickTrips *redisTrips
}

// newTestApp is a Server on a database and Redis prefix of its own, with
// the options applied before its routes are built. Rate limits are off
// unless an option (withRateLimits) turns them on: most tests sign many
// accounts up from one address.
func newTestApp(t testing.TB, options ...func(*handlers.Server)) *testApp {
	t.Helper()
	return newTestAppOn(t, storetest.MustOpenDB(t), storetest.MustOpenRedis(t), options...)
}

// plainScripts sends the queue's hot scripts and a fan's hold scripts on the
// Redis client itself, not its autopipeliner (store.Queue.Pipe,
// store.Holds.Pipe), whose hooks see no request's context: for the tests
// that count a request's commands with a hook.
func plainScripts(s *handlers.Server) {
	s.Queue.(*store.Queue).Pipe = nil
	s.Holds.(*store.Holds).Pipe = nil
}

// withRateLimits turns the rate limits on.
func withRateLimits(s *handlers.Server) {
	s.Limiter = store.NewRateLimiter(s.Queue.(*store.Queue).Redis)
}

// newTestAppOn is newTestApp on the given stores (a private server's, for
// outage tests).
func newTestAppOn(t testing.TB, db *store.DB, rdb *store.Redis, options ...func(*handlers.Server)) *testApp {
	t.Helper()
	return newTestAppPG(t, db, db, rdb, options...)
}

// newTestAppPG is newTestAppOn with the sandbox PG's state in pgDB, a
// database that may outlive db's outages.
func newTestAppPG(t testing.TB, db, pgDB *store.DB, rdb *store.Redis, options ...func(*handlers.Server)) *testApp {
	t.Helper()
	registry := prometheus.NewRegistry()
	sessionStore, err := store.NewSessions(rdb.Client, rdb.Prefix, 0, registry)
	if err != nil {
		t.Fatal(err)
	}
	sessions := handlers.NewSessions(sessionStore, false)
	holds, err := store.NewHolds(db, rdb, registry)
	if err != nil {
		t.Fatal(err)
	}
	queueMetrics, err := store.NewQueueMetrics(registry)
	if err != nil {
		t.Fatal(err)
	}
	events := &store.Events{DB: db}
	pipe, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	holds.Pipe = pipe
	trips, tickTrips := &redisTrips{}, &redisTrips{}
	stopping, stop := context.WithCancel(withTrips(context.Background(), tickTrips))
	srv := &handlers.Server{
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sessions:      sessions,
		Accounts:      &store.Accounts{DB: db, Cost: bcrypt.MinCost},
		Events:        events,
		LiveEvents:    &store.EventCache{Events: events, TTL: time.Millisecond},
		EventPages:    &store.EventCache{Events: events, Holds: holds}, // a second, as served: tests Forget to see a change at once
		Queue:         &store.Queue{Redis: rdb, Metrics: queueMetrics, Pipe: pipe},
		Draws:         &store.Draws{DB: db},
		Holds:         holds,
		Ready:         map[string]handlers.Pinger{"postgres": db, "redis": rdb},
		Metrics:       registry,
		Stopping:      stopping,
		Venues:        &store.Venues{DB: db},
		Audit:         &store.AuditLog{DB: db},
		Broadcasts:    &store.Broadcasts{DB: db, Redis: rdb},
		AdmissionTick: 100 * time.Millisecond,
		ChallengeKey:  testChallengeKey,
		// The tests below read English sentences; the language tests
		// (lang_test.go) set the default to Korean, the product's.
		DefaultLang: views.English,
	}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context { return withTrips(ctx, trips) }
	base := "http://" + ts.Listener.Addr().String()
	sb, err := sandbox.New(context.Background(), sandbox.Config{
		Provider: sandbox.Provider, Pool: pgDB.Pool, SecretKey: testPGSecret, WebhookURL: base + "/payments/webhook",
		RetryDelays: []time.Duration{200 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second},
		Logger:      srv.Logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	pg := &toss.Client{BaseURL: base + "/sandbox-pg", SecretKey: testPGSecret}
	orders := &store.Orders{DB: db, Holds: holds, TicketSecret: []byte("test-ticket-secret-of-32-characters!"), Logger: srv.Logger}
	service := &checkout.Service{
		Orders: orders, Refunds: &store.Refunds{DB: db, Holds: holds, Logger: srv.Logger}, PG: pg,
		SuccessURL: base + "/payments/success", FailURL: base + "/payments/fail", Logger: srv.Logger,
	}
	srv.Orders, srv.Desk, srv.Checkout, srv.Refunds, srv.SandboxPG, srv.PGCurrencies = orders, orders, service, service, sb, pg.Currencies()
	srv.Blocks = &store.Blocks{DB: db, Holds: holds}
	for _, o := range options {
		o(srv)
	}
	ts.Config.Handler = srv.Handler()
	ts.Start()
	copying, stopCopying := context.WithCancel(context.Background())
	copied := make(chan struct{})
	go func() { defer close(copied); sessionStore.Run(copying) }()
	t.Cleanup(func() { stop(); ts.Close(); sb.Close(); stopCopying(); <-copied })
	return &testApp{Server: ts, DB: db, Redis: rdb, Srv: srv, Stop: stop, Orders: orders, Checkout: service, Sandbox: sb, PG: pg, Sessions: sessionStore,
		Trips: trips, TickTrips: tickTrips}
}

const testPGSecret = "test_sk_handlers"

// newAccount creates an account with the role (fan or admin) and returns a
// client logged in as it.
func (a *testApp) newAccount(t *testing.T, email, role string) (*client, *boxoffice.Account) {
	t.Helper()
	acct, err := a.Srv.Accounts.CreateAccount(context.Background(), boxoffice.Signup{Email: email, Password: "correct horse", Name: email, Role: role})
	if err != nil {
		t.Fatalf("create account %s: %v", email, err)
	}
	c := a.newClient(t)
	wantStatus(t, c.do("POST", "/login", url.Values{"email": {email}, "password": {"correct horse"}}), http.StatusSeeOther)
	return c, acct
}

// client is a browser-like client with its own cookie jar that does not
// follow redirects, so tests can assert on 303s.
type client struct {
	*http.Client
	t    *testing.T
	base string
}

func (a *testApp) newClient(t *testing.T) *client {
	jar, _ := cookiejar.New(nil)
	return &client{
		Client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		t:      t,
		base:   a.URL,
	}
}

// do sends a request with optional form values and headers ("Name: value").
func (c *client) do(method, path string, form url.Values, headers ...string) *http.Response {
	c.t.Helper()
	resp, err := c.try(method, path, form, headers...)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// try is do for goroutines other than the test's: it returns the error
// instead of failing the test, and the caller closes the body.
func (c *client) try(method, path string, form url.Values, headers ...string) (*http.Response, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	return c.Do(req)
}

// doc parses an HTML response.
func doc(t *testing.T, resp *http.Response) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatalf("parse HTML: %v", err)
	}
	return d
}

// testid returns the trimmed text of the elements with data-testid=id.
func testid(d *goquery.Document, id string) string {
	return strings.TrimSpace(d.Find(`[data-testid="` + id + `"]`).Text())
}

func wantStatus(t *testing.T, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: status %d, want %d; body: %.500s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want, b)
	}
}

// count returns the data-count of the element with data-testid=id: the
// number a sentence such as "22 seats" or "22석" says.
func count(d *goquery.Document, id string) string {
	return d.Find(`[data-testid="`+id+`"]`).AttrOr("data-count", "")
}
