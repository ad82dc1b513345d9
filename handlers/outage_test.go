package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// With PostgreSQL down, pages that need it answer 503 with a clear message at
// once (no hang, no stack trace), /readyz says 503, and all recovers when it
// is back, with no restart. An event page the instance served before keeps
// working from its copy of the event, as the seat map does.
func TestOutage_Postgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := storetest.StartPostgres(t)
	db := pg.MustOpenDB()
	if _, err := demo.Seed(ctx, db, demo.Options{Password: "correct horse", BcryptCost: 4}); err != nil {
		t.Fatal(err)
	}
	app := newTestAppOn(t, db, storetest.MustOpenRedis(t))
	c := app.newClient(t)
	wantStatus(t, c.do("GET", "/events/1", nil), http.StatusOK)

	pg.Stop()
	wantStatus(t, c.do("GET", "/events/1", nil), http.StatusOK)
	for _, path := range []string{"/", "/events/2"} {
		start := time.Now()
		resp := c.do("GET", path, nil)
		wantStatus(t, resp, http.StatusServiceUnavailable)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("GET %s took %v with PostgreSQL down, want an answer within the connect timeout", path, took)
		}
		if msg := testid(doc(t, resp), "error-message"); msg != "The box office is briefly unavailable. Please try again in a few seconds." {
			t.Errorf("GET %s with PostgreSQL down says %q", path, msg)
		}
	}
	j := c.do("POST", "/login", url.Values{"email": {"fan1@boxoffice.test"}, "password": {"correct horse"}}, "Accept: application/json")
	wantStatus(t, j, http.StatusServiceUnavailable)
	var body map[string]string
	if err := json.NewDecoder(j.Body).Decode(&body); err != nil || body["error"] != "unavailable" {
		t.Errorf("log-in with PostgreSQL down = %v (%v), want error unavailable", body, err)
	}
	if j.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	wantStatus(t, c.do("GET", "/readyz", nil), http.StatusServiceUnavailable)

	pg.Start()
	wantStatus(t, c.do("GET", "/readyz", nil), http.StatusOK)
	wantStatus(t, c.do("GET", "/events/1", nil), http.StatusOK)
	wantStatus(t, c.do("POST", "/login", url.Values{"email": {"fan1@boxoffice.test"}, "password": {"correct horse"}}), http.StatusSeeOther)
}

// With Redis down, a request with a session answers 503 (the session store
// is Redis) once the instance dropped its copy of the session (within a
// second of losing the subscription), and recovers when Redis is back; the
// log-in survives only if Redis kept it, so a restart that lost everything
// logs fans out cleanly.
func TestOutage_Redis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := storetest.StartRedis(t)
	rdb, err := store.OpenRedis(ctx, r.URL, "t:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	app := newTestAppOn(t, storetest.MustOpenDB(t), rdb)
	c, _ := app.newAccount(t, "kim@example.com", "fan")
	if got := testid(doc(t, c.do("GET", "/login", nil)), "nav-account"); got != "kim@example.com" {
		t.Fatalf("logged in as %q", got)
	}

	r.Stop()
	resp := c.do("GET", "/login", nil)
	for deadline := time.Now().Add(10 * time.Second); resp.StatusCode == http.StatusOK && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp = c.do("GET", "/login", nil) // served from the copy until the instance notices
	}
	wantStatus(t, resp, http.StatusServiceUnavailable)
	if msg := testid(doc(t, resp), "error-message"); msg == "" {
		t.Error("503 page without a message")
	}
	wantStatus(t, c.do("GET", "/readyz", nil), http.StatusServiceUnavailable)

	r.Start() // empty: every session is gone
	resp = c.do("GET", "/login", nil)
	wantStatus(t, resp, http.StatusOK)
	if got := testid(doc(t, resp), "nav-login"); got == "" {
		t.Error("after Redis lost its data the fan still looks logged in")
	}
	wantStatus(t, c.do("GET", "/readyz", nil), http.StatusOK)
}
