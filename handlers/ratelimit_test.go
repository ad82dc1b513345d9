package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

func TestRateLimit_Login(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, withRateLimits)
	c := app.newClient(t)
	wrong := url.Values{"email": {"target@example.com"}, "password": {"wrong horse"}}
	for range 10 {
		wantStatus(t, c.do("POST", "/login", wrong), http.StatusUnauthorized)
	}
	resp := c.do("POST", "/login", wrong, "Accept: application/json")
	wantStatus(t, resp, http.StatusTooManyRequests)
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
		t.Errorf("Retry-After = %q, want whole seconds from 1 to 60", resp.Header.Get("Retry-After"))
	}
	// Another e-mail from the same address is still let through: the
	// per-address allowance is larger than the per-e-mail one.
	wantStatus(t, c.do("POST", "/login", url.Values{"email": {"someone@example.com"}, "password": {"wrong horse"}}), http.StatusUnauthorized)
}

func TestRateLimit_Signup(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, withRateLimits)
	c := app.newClient(t)
	for i := range 20 {
		wantStatus(t, c.do("POST", "/signup", signupForm(fmt.Sprintf("bot%d@example.com", i), "correct horse", "Bot")), http.StatusSeeOther)
	}
	before := app.countAccounts(t)
	resp := c.do("POST", "/signup", signupForm("bot20@example.com", "correct horse", "Bot"))
	wantStatus(t, resp, http.StatusTooManyRequests)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if after := app.countAccounts(t); after != before {
		t.Errorf("a refused sign-up wrote an account (%d -> %d)", before, after)
	}
}

// Joining is limited per account: a script hammering the join button is
// slowed down, and its place in line is never changed by it.
func TestRateLimit_Join(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, withRateLimits)
	ev := app.openEvent(t)
	c, _ := app.newAccount(t, "clicker@example.com", "fan")
	path := fmt.Sprintf("/events/%d/queue", ev.ID)
	for range 30 {
		wantStatus(t, c.do("POST", path, url.Values{}, "Accept: application/json"), http.StatusOK)
	}
	resp := c.do("POST", path, url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusTooManyRequests)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	other, _ := app.newAccount(t, "patient@example.com", "fan")
	wantStatus(t, other.do("POST", path, url.Values{}, "Accept: application/json"), http.StatusOK)
	position(t, c, path+"/status", "waiting", 1)
	position(t, other, path+"/status", "waiting", 2)
}
