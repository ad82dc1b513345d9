package handlers_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/redis/go-redis/v9"
)

// burst sends n copies of a request at once and counts the answers by
// status; it returns the 429s' Retry-After values and how long it took.
func burst(t *testing.T, n int, send func(i int) *http.Response) (map[int]int, []string, time.Duration) {
	t.Helper()
	var mu sync.Mutex
	statuses, retry := map[int]int{}, []string{}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp := send(i)
			mu.Lock()
			defer mu.Unlock()
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests {
				retry = append(retry, resp.Header.Get("Retry-After"))
			}
		})
	}
	wg.Wait()
	return statuses, retry, time.Since(start)
}

// wantLimited checks a burst against an allowance of perMinute (burst of
// the same size): some requests were refused with Retry-After in whole
// seconds, and no more got through than the allowance plus what refilled
// while the burst ran (a loaded machine may take seconds).
func wantLimited(t *testing.T, statuses map[int]int, retry []string, took time.Duration, allowedStatus, perMinute int) {
	t.Helper()
	refill := int(took.Minutes()*float64(perMinute)) + 1
	if got := statuses[allowedStatus]; got < 1 || got > perMinute+refill {
		t.Errorf("%d requests got through (statuses %v in %v), want 1 to %d", got, statuses, took, perMinute+refill)
	}
	if len(retry) == 0 {
		t.Fatalf("no request was refused (statuses %v)", statuses)
	}
	for _, r := range retry {
		if s, err := strconv.Atoi(r); err != nil || s < 1 || s > 60 {
			t.Fatalf("Retry-After = %q, want whole seconds from 1 to 60", r)
		}
	}
}

func TestRateLimit_Login(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, withRateLimits)
	wrong := url.Values{"email": {"target@example.com"}, "password": {"wrong horse"}}
	statuses, retry, took := burst(t, 40, func(int) *http.Response {
		return app.newClient(t).do("POST", "/login", wrong, "Accept: application/json")
	})
	wantLimited(t, statuses, retry, took, http.StatusUnauthorized, 10)
	if statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != 40 {
		t.Errorf("statuses %v, want only 401 and 429", statuses)
	}
	// Another e-mail from the same address is still let through: the
	// per-address allowance is larger than the per-e-mail one.
	wantStatus(t, app.newClient(t).do("POST", "/login", url.Values{"email": {"someone@example.com"}, "password": {"wrong horse"}}), http.StatusUnauthorized)
}

// The per-e-mail log-in allowance is counted in Redis under the e-mail
// address and the client's: an e-mail longer than any account's is refused
// unread and writes no key, and no key is long, so a script cannot fill
// Redis with long keys.
func TestRateLimit_LoginLongEmail(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, withRateLimits)
	long := strings.Repeat("x", 60<<10) + "@example.com"
	resp := app.newClient(t).do("POST", "/login", url.Values{"email": {long}, "password": {"wrong horse"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	wantErrorCode(t, resp, "invalid")
	keys, err := storetest.Keys(context.Background(), app.Redis, "*"+app.Redis.Prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	limited := 0
	for _, k := range keys {
		if len(k) > 1<<10 {
			t.Errorf("Redis key of %d bytes written (%.80s...)", len(k), k)
		}
		if strings.Contains(k, "login:") {
			limited++
		}
	}
	if limited != 1 {
		t.Errorf("%d log-in allowances in Redis, want the address's alone", limited)
	}
}

// newClientFrom is newClient connecting from the loopback address ip (such
// as 127.0.0.2), which the server takes as the client's address.
func (a *testApp) newClientFrom(t *testing.T, ip string) *client {
	c := a.newClient(t)
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c.Transport = &http.Transport{DialContext: dialer.DialContext}
	return c
}

// A stranger who knows a fan's e-mail and fails to log in as the fan until
// refused is refused alone: the fan, from another address, still logs in,
// and the stranger stays refused even with the right password.
func TestRateLimit_LoginOtherAddress(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, withRateLimits)
	app.newAccount(t, "fan@example.com", "fan")
	stranger := app.newClientFrom(t, "127.0.0.2")
	wrong := url.Values{"email": {"fan@example.com"}, "password": {"wrong horse"}}
	statuses, retry, took := burst(t, 40, func(int) *http.Response {
		return stranger.do("POST", "/login", wrong, "Accept: application/json")
	})
	wantLimited(t, statuses, retry, took, http.StatusUnauthorized, 10)

	right := url.Values{"email": {"fan@example.com"}, "password": {"correct horse"}}
	wantStatus(t, app.newClientFrom(t, "127.0.0.3").do("POST", "/login", right), http.StatusSeeOther)
	resp := stranger.do("POST", "/login", right)
	wantStatus(t, resp, http.StatusTooManyRequests)
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
		t.Errorf("Retry-After = %q, want whole seconds from 1 to 60", resp.Header.Get("Retry-After"))
	}
}

func TestRateLimit_Signup(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, withRateLimits)
	statuses, retry, took := burst(t, 60, func(i int) *http.Response {
		return app.newClient(t).do("POST", "/signup", signupForm(fmt.Sprintf("bot%d@example.com", i), "correct horse", "Bot"))
	})
	wantLimited(t, statuses, retry, took, http.StatusSeeOther, 20)
	if n := app.countAccounts(t); n != statuses[http.StatusSeeOther] {
		t.Errorf("%d accounts written for %d sign-ups let through: refused sign-ups must write nothing", n, statuses[http.StatusSeeOther])
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
	statuses, retry, took := burst(t, 90, func(int) *http.Response {
		return c.do("POST", path, url.Values{}, "Accept: application/json")
	})
	wantLimited(t, statuses, retry, took, http.StatusOK, 30)
	other, _ := app.newAccount(t, "patient@example.com", "fan")
	wantStatus(t, other.do("POST", path, url.Values{}, "Accept: application/json"), http.StatusOK)
	position(t, c, path+"/status", "waiting", 1)
	position(t, other, path+"/status", "waiting", 2)
}

// withTrustedProxy trusts X-Forwarded-For from 127.0.0.1, the address of
// newClient's connections, as from a load balancer.
func withTrustedProxy(s *handlers.Server) {
	s.TrustedProxies = []*net.IPNet{{IP: net.IPv4(127, 0, 0, 1).To4(), Mask: net.CIDRMask(32, 32)}}
}

// Behind a trusted load balancer the per-address limits count each fan's
// own address, as the balancer forwards it; a peer that is not trusted
// counts as itself, whatever X-Forwarded-For it sends.
func TestRateLimit_TrustedProxies(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, withRateLimits, withTrustedProxy)

	// 60 fans behind the balancer, each from an address of its own: none is limited.
	statuses, _, _ := burst(t, 60, func(i int) *http.Response {
		return app.newClient(t).do("POST", "/signup", signupForm(fmt.Sprintf("fan%d@example.com", i), "correct horse", "Fan"),
			fmt.Sprintf("X-Forwarded-For: 198.51.100.%d", i+1))
	})
	if statuses[http.StatusSeeOther] != 60 {
		t.Fatalf("60 fans from 60 forwarded addresses got %v, want 60 sign-ups", statuses)
	}
	// One address behind the balancer (its own entry first, as a client may send one) meets its allowance.
	statuses, retry, took := burst(t, 60, func(i int) *http.Response {
		return app.newClient(t).do("POST", "/signup", signupForm(fmt.Sprintf("bot%d@example.com", i), "correct horse", "Bot"),
			fmt.Sprintf("X-Forwarded-For: 10.9.%d.1, 203.0.113.9", i))
	})
	wantLimited(t, statuses, retry, took, http.StatusSeeOther, 20)

	// A peer that is not trusted forges X-Forwarded-For in vain.
	statuses, retry, took = burst(t, 60, func(i int) *http.Response {
		return app.newClientFrom(t, "127.0.0.2").do("POST", "/signup", signupForm(fmt.Sprintf("forger%d@example.com", i), "correct horse", "Forger"),
			fmt.Sprintf("X-Forwarded-For: 192.0.2.%d", i+1))
	})
	wantLimited(t, statuses, retry, took, http.StatusSeeOther, 20)
}

// A limiter that cannot reach Redis refuses the request (503, with the
// catalog's sentence) and logs at error level: the limits are never off
// unseen.
func TestRateLimit_FailsClosed(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	ln.Close()
	app := newTestApp(t, func(s *handlers.Server) {
		dead := &store.Redis{Client: redis.NewClient(&redis.Options{Addr: deadAddr, MaxRetries: -1}), Prefix: "dead:"}
		t.Cleanup(func() { dead.Close() })
		s.Limiter = store.NewRateLimiter(dead)
		s.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	resp := app.newClient(t).do("POST", "/signup", signupForm("fan@example.com", "correct horse", "Fan"), "Accept: application/json")
	wantStatus(t, resp, http.StatusServiceUnavailable)
	wantErrorCode(t, resp, "unavailable")
	if n := app.countAccounts(t); n != 0 {
		t.Errorf("%d accounts written while the limiter could not count, want none", n)
	}
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "rate limiter unavailable") {
		t.Errorf("log = %q, want an error-level line about the rate limiter", l)
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
