package handlers_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/store"
)

// The hot requests of a sale, in process, through the binary's whole
// handler (echo and every middleware, the session copy, the store's one
// Redis round trip or none) on real Redis and PostgreSQL, with rate limits
// off as make bench runs the binary. Each runs many requests at once
// (b.RunParallel) so that Redis's latency is hidden and ns/op is close to
// the CPU a request costs the process; allocs/op is exact. Fans' sessions
// are in the instance's copy before the timer starts, as in a sale's
// steady state. cpu-ns/op is the process's CPU time per request (the
// benchmark's own requests and recorders included), steadier than ns/op on
// a machine that other work shares. Profile one with, for example:
//
//	go test -run '^$' -bench 'Hot/Join' -benchmem -cpuprofile cpu.out ./handlers
//	go tool pprof -top cpu.out

// hotFans is the number of fans of each benchmark; they take turns.
const hotFans = 256

// hotParallelism is the number of requests in flight per GOMAXPROCS.
const hotParallelism = 16

// hotSale is an open event of 2*hotFans seats, with hotFans fans logged in
// (each a session in Redis and the instance's copy).
type hotSale struct {
	app     *testApp
	handler http.Handler
	event   *boxoffice.Event
	fans    []hotFan
	// joined and admitted say that every fan joined, and was admitted.
	joined, admitted bool
}

// hotFan is a fan of a hotSale: the account, the cookies its browser sends
// and the seat it holds in the hold benchmark.
type hotFan struct {
	account int64
	sid     string
	cookies string
	seat    string
}

func newHotSale(b *testing.B) *hotSale {
	b.Helper()
	// The event from a copy of the binary's age (1 s), not the tests' 1 ms.
	app := newTestApp(b, func(s *handlers.Server) { s.LiveEvents = &store.EventCache{Events: s.Events} })
	ctx := context.Background()
	seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{{Name: "A", Rows: 2 * hotFans / 16, SeatsPerRow: 16, Grade: "R"}})
	if err != nil {
		b.Fatal(err)
	}
	venue, err := (&store.Venues{DB: app.DB}).CreateVenue(ctx, "Hot Hall", seats)
	if err != nil {
		b.Fatal(err)
	}
	in := boxoffice.NewEventInput()
	now := time.Now().Truncate(time.Second)
	in.VenueID, in.Title = venue.ID, boxoffice.Text{"en": "Hot Night"}
	in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = now.Add(-time.Hour), now.Add(time.Hour), now.Add(2*time.Hour)
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": "R seat"}, Price: 100000}}
	ev, err := app.Srv.Events.CreateEvent(ctx, in)
	if err != nil {
		b.Fatal(err)
	}
	if ev, err = app.Srv.Events.PublishEvent(ctx, ev.ID); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !app.Sessions.Copying(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the session store does not copy sessions")
		}
	}
	s := &hotSale{app: app, handler: app.Config.Handler, event: ev}
	for i := range hotFans {
		acct := int64(i + 1)
		sid := fmt.Sprintf("sid-%d", acct)
		token := app.benchSession(b, acct, sid)
		s.fans = append(s.fans, hotFan{account: acct, sid: sid, cookies: "boxoffice_session=" + token, seat: seats[i].Label})
	}
	// Each fan's first request reads its session from Redis into the copy.
	s.each(b, "GET", fmt.Sprintf("/events/%d", ev.ID), "", http.StatusOK)
	return s
}

// benchSession stores a session of account acct with session key sid in
// Redis, as a log-in does, and returns its token (the session cookie's
// value).
func (a *testApp) benchSession(b *testing.B, acct int64, sid string) string {
	b.Helper()
	tok := make([]byte, 32)
	rand.Read(tok)
	token := base64.RawURLEncoding.EncodeToString(tok)
	deadline := time.Now().Add(time.Hour)
	enc, err := a.Sessions.Codec().Encode(deadline, map[string]any{
		"account_id": acct, "email": fmt.Sprintf("f%d@example.com", acct), "name": "fan", "role": boxoffice.RoleFan, "sid": sid,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Sessions.CommitCtx(context.Background(), token, enc, deadline); err != nil {
		b.Fatal(err)
	}
	return token
}

// request is a request of fan f as a browser sends it; a POST sends form
// as its body. It is built by hand, not parsed from text as
// httptest.NewRequest does, so that the benchmark's own work stays small
// next to the server's.
func (s *hotSale) request(f *hotFan, method, path, form string, headers ...string) *http.Request {
	u, err := url.ParseRequestURI(path)
	if err != nil {
		panic(err)
	}
	r := &http.Request{Method: method, URL: u, RequestURI: path, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Host: "example.com", RemoteAddr: "192.0.2.1:1234", Body: http.NoBody, Header: http.Header{
			"Cookie":          {f.cookies},
			"Accept-Language": {"ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7"},
		}}
	if method == http.MethodPost {
		r.Body, r.ContentLength = io.NopCloser(strings.NewReader(form)), int64(len(form))
		r.Header["Content-Type"] = []string{"application/x-www-form-urlencoded"}
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		r.Header[k] = []string{v}
	}
	return r
}

// serve sends the request and fails unless it is answered with status.
func (s *hotSale) serve(b *testing.B, r *http.Request, status int) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(connRecorder{w}, r)
	if w.Code != status {
		b.Errorf("%s %s: status %d, want %d: %.300s", r.Method, r.URL.Path, w.Code, status, w.Body)
	}
	return w
}

// connRecorder is a recorder that takes a read deadline, as the binary's
// connections do: bodyDeadline sets one on every request with a body, and
// on a bare recorder net/http's ResponseController answers that with an
// error it formats each time, work that the binary never does.
type connRecorder struct{ *httptest.ResponseRecorder }

// SetReadDeadline does nothing: the recorder's body is read from memory.
func (connRecorder) SetReadDeadline(time.Time) error { return nil }

// each sends the request once for every fan.
func (s *hotSale) each(b *testing.B, method, path, form string, status int, headers ...string) {
	b.Helper()
	for i := range s.fans {
		s.serve(b, s.request(&s.fans[i], method, path, form, headers...), status)
	}
}

// join has every fan join the line over HTTP, once, and keeps the place
// cookie the answer sets.
func (s *hotSale) join(b *testing.B) {
	b.Helper()
	if s.joined {
		return
	}
	s.joined = true
	for i := range s.fans {
		f := &s.fans[i]
		w := s.serve(b, s.request(f, "POST", s.queuePath(), "", "Accept: application/json"), http.StatusOK)
		for _, c := range w.Result().Cookies() {
			f.cookies += "; " + c.Name + "=" + c.Value
		}
	}
}

// admit admits every fan who joined, once.
func (s *hotSale) admit(b *testing.B) {
	b.Helper()
	s.join(b)
	if s.admitted {
		return
	}
	s.admitted = true
	r, err := s.app.Srv.Queue.(*store.Queue).Admit(context.Background(),
		boxoffice.AdmissionSettings{EventID: s.event.ID, Rate: 10 * hotFans, TokenTTL: time.Hour}, ticks.Add(1), time.Second)
	if err != nil || len(r.Admitted) != hotFans {
		b.Fatalf("admitted %d of %d fans: %v", len(r.Admitted), hotFans, err)
	}
}

func (s *hotSale) queuePath() string { return fmt.Sprintf("/events/%d/queue", s.event.ID) }

// run measures the request that req makes for a fan, the fans taking turns.
func (s *hotSale) run(b *testing.B, status int, req func(f *hotFan) *http.Request) {
	var turn atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(hotParallelism)
	b.ResetTimer()
	cpu := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			f := &s.fans[int(turn.Add(1))%len(s.fans)]
			s.serve(b, req(f), status)
		}
	})
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// runOwn is run with each of the benchmark's goroutines taking turns among
// fans of its own, so that no two requests of one fan are ever in flight
// at once; each op is pair(f), which may serve several requests.
func (s *hotSale) runOwn(b *testing.B, pair func(f *hotFan)) {
	goroutines := hotParallelism * runtime.GOMAXPROCS(0)
	if goroutines > len(s.fans) {
		b.Fatalf("%d goroutines for %d fans: each needs a fan of its own", goroutines, len(s.fans))
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(hotParallelism)
	b.ResetTimer()
	cpu := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		g := int(next.Add(1) - 1)
		for i := g; pb.Next(); i += goroutines {
			if i >= len(s.fans) {
				i = g
			}
			pair(&s.fans[i])
		}
	})
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU returns the CPU time the process has used (user and system),
// in nanoseconds: on a machine shared with other work, a request's CPU
// time varies less than its wall time.
func processCPU() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return u.Utime.Nano() + u.Stime.Nano()
}

func BenchmarkHot(b *testing.B) {
	s := newHotSale(b)
	// /healthz through the same middleware, the floor under every request.
	b.Run("Healthz", func(b *testing.B) {
		s.run(b, http.StatusOK, func(f *hotFan) *http.Request { return s.request(f, "GET", "/healthz", "") })
	})
	// POST /events/{id}/queue (JSON), fans joining again: the join script.
	b.Run("Join", func(b *testing.B) {
		s.join(b)
		s.run(b, http.StatusOK, func(f *hotFan) *http.Request {
			return s.request(f, "POST", s.queuePath(), "", "Accept: application/json")
		})
	})
	// GET /events/{id}/queue/status of fans waiting, as JSON and as the
	// waiting room's htmx fragment: the instance's figures of the tick.
	b.Run("Position/JSON", func(b *testing.B) {
		s.join(b)
		s.run(b, http.StatusOK, func(f *hotFan) *http.Request {
			return s.request(f, "GET", s.queuePath()+"/status", "", "Accept: application/json")
		})
	})
	b.Run("Position/htmx", func(b *testing.B) {
		s.join(b)
		s.run(b, http.StatusOK, func(f *hotFan) *http.Request {
			return s.request(f, "GET", s.queuePath()+"/status", "", "HX-Request: true")
		})
	})
	// The same poll of fans already admitted: one read of Redis each (their
	// place is behind the head, so the figures cannot answer it). This and
	// what follows admit the fans, so they run last.
	b.Run("Position/Admitted/JSON", func(b *testing.B) {
		s.admit(b)
		s.run(b, http.StatusOK, func(f *hotFan) *http.Request {
			return s.request(f, "GET", s.queuePath()+"/status", "", "Accept: application/json")
		})
	})
	// GET /events/{id}/entry (JSON) of admitted fans: the entry token's read,
	// as the seat map page and checkout make it.
	b.Run("Entry/JSON", func(b *testing.B) {
		s.admit(b)
		path := fmt.Sprintf("/events/%d/entry", s.event.ID)
		s.run(b, http.StatusOK, func(f *hotFan) *http.Request {
			return s.request(f, "GET", path, "", "Accept: application/json")
		})
	})
	// GET /events/{id}/seats of admitted fans whose browser has the page
	// (If-None-Match, Chromium's Accept-Encoding): the entry read, then 304
	// from the instance's cache, as the load test's warm seat map step.
	b.Run("SeatMap/Warm", func(b *testing.B) {
		s.admit(b)
		path := fmt.Sprintf("/events/%d/seats", s.event.ID)
		w := s.serve(b, s.request(&s.fans[0], "GET", path, "", "Accept: text/html,application/xhtml+xml", "Accept-Encoding: gzip, deflate, br, zstd"), http.StatusOK)
		etag := "If-None-Match: " + w.Header().Get("ETag")
		s.run(b, http.StatusNotModified, func(f *hotFan) *http.Request {
			return s.request(f, "GET", path, "", "Accept: text/html,application/xhtml+xml", "Accept-Encoding: gzip, deflate, br, zstd", etag)
		})
	})
	// POST /events/{id}/holds (JSON) of admitted fans, each holding its own
	// seat again: the hold script.
	b.Run("Hold/JSON", func(b *testing.B) {
		s.admit(b)
		path := fmt.Sprintf("/events/%d/holds", s.event.ID)
		s.run(b, http.StatusOK, func(f *hotFan) *http.Request {
			return s.request(f, "POST", path, "seat="+f.seat, "Accept: application/json")
		})
	})
	// The same hold, then DELETE /events/{id}/holds/{seat} (JSON) of the
	// seat: each op is the pair, so a release costs the pair less a
	// Hold/JSON.
	b.Run("HoldRelease/JSON", func(b *testing.B) {
		s.admit(b)
		path := fmt.Sprintf("/events/%d/holds", s.event.ID)
		s.runOwn(b, func(f *hotFan) {
			s.serve(b, s.request(f, "POST", path, "seat="+f.seat, "Accept: application/json"), http.StatusOK)
			s.serve(b, s.request(f, "DELETE", path+"/"+f.seat, "", "Accept: application/json"), http.StatusOK)
		})
	})
}
