package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A fan sends back the cookies the server set, where their Path says, as a
// browser does (the join's place cookie goes to the queue's addresses
// only), and never a second session cookie.
func TestFan_KeepsCookies(t *testing.T) {
	f := &Fan{Cookie: sessionCookie + "=tok"}
	join, _ := url.Parse("http://127.0.0.1:8080/events/7/queue")
	h := http.Header{}
	h.Add("Set-Cookie", "boxoffice_queue_epoch=e1.5.3.3; Path=/events/7/queue; Max-Age=3600; HttpOnly; SameSite=Lax")
	h.Add("Set-Cookie", sessionCookie+"=other; Path=/; HttpOnly")
	f.keep(join, h)
	for _, tt := range []struct{ path, want string }{
		{"/events/7/queue/status", sessionCookie + "=tok; boxoffice_queue_epoch=e1.5.3.3"},
		{"/events/7/queue", sessionCookie + "=tok; boxoffice_queue_epoch=e1.5.3.3"},
		{"/events/7/seats", sessionCookie + "=tok"},
		{"/events/8/queue/status", sessionCookie + "=tok"},
		{"/events/7/queuex", sessionCookie + "=tok"},
		{"/", sessionCookie + "=tok"},
	} {
		u, _ := url.Parse("http://127.0.0.1:8080" + tt.path)
		if got := f.cookies(u); got != tt.want {
			t.Errorf("Cookie to %s = %q, want %q", tt.path, got, tt.want)
		}
	}
	// A later answer that replaces the place cookie replaces it.
	h = http.Header{"Set-Cookie": {"boxoffice_queue_epoch=e1.5.3.9; Path=/events/7/queue"}}
	f.keep(join, h)
	u, _ := url.Parse("http://127.0.0.1:8080/events/7/queue/status")
	if got, want := f.cookies(u), sessionCookie+"=tok; boxoffice_queue_epoch=e1.5.3.9"; got != want {
		t.Errorf("after a second join: Cookie = %q, want %q", got, want)
	}
	// An answer that expires the place cookie removes it.
	h = http.Header{"Set-Cookie": {"boxoffice_queue_epoch=; Path=/events/7/queue; Max-Age=0"}}
	f.keep(join, h)
	if got, want := f.cookies(u), sessionCookie+"=tok"; got != want {
		t.Errorf("after the cookie expired: Cookie = %q, want %q", got, want)
	}
	// The same line as before the expiry sets it again, and a repeat of it
	// keeps it.
	for range 2 {
		f.keep(join, http.Header{"Set-Cookie": {"boxoffice_queue_epoch=e1.5.3.9; Path=/events/7/queue"}})
		if got, want := f.cookies(u), sessionCookie+"=tok; boxoffice_queue_epoch=e1.5.3.9"; got != want {
			t.Errorf("after the cookie was set again: Cookie = %q, want %q", got, want)
		}
	}
	// A cookie without a Path goes where the jar's default path (the
	// request's directory) says, and one with Path=/ everywhere.
	h = http.Header{"Set-Cookie": {"nopath=1", "lang=ko; Path=/"}}
	f.keep(join, h)
	for _, tt := range []struct{ path, want string }{
		{"/events/7/seats", sessionCookie + "=tok; nopath=1; lang=ko"},
		{"/account", sessionCookie + "=tok; lang=ko"},
	} {
		u, _ := url.Parse("http://127.0.0.1:8080" + tt.path)
		if got := f.cookies(u); got != tt.want {
			t.Errorf("Cookie to %s = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// BenchmarkFanRequests is the generator's side of a waiting fan's position
// poll, as the waiting phase sends it (call, kind, the position's JSON),
// and of a cold seat map page (84 KB in brotli, read whole), against a
// loopback server that answers at once. cpu-µs/op is the process's CPU a
// request, the loopback server's trivial answer included (the same before
// and after a change of the client).
func BenchmarkFanRequests(b *testing.B) {
	page := bytes.Repeat([]byte{'x'}, 84<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Vary", "Accept, Cookie, Accept-Encoding")
		switch {
		case r.Method == http.MethodPost:
			h.Add("Set-Cookie", "boxoffice_queue_epoch=e1.5.3.3; Path=/events/7/queue; Max-Age=3600; HttpOnly; SameSite=Lax")
		case r.URL.Path == "/events/7/seats":
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Content-Encoding", "br")
			h.Set("ETag", `"p1"`)
			h.Set("Content-Length", strconv.Itoa(len(page)))
			w.Write(page)
			return
		}
		h.Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"waiting","position":1234,"ahead":1233,"eta_seconds":12}`+"\n")
	}))
	defer srv.Close()
	c := newClient(64)
	f := &Fan{Cookie: sessionCookie + "=tok"}
	ctx := context.Background()
	if _, err := call(ctx, c, http.MethodPost, srv.URL+"/events/7/queue", f, url.Values{}); err != nil {
		b.Fatal(err)
	}
	b.Run("poll", func(b *testing.B) {
		statusURL := srv.URL + "/events/7/queue/status"
		b.ReportAllocs()
		cpu0 := processCPU(b)
		for b.Loop() {
			a, err := call(ctx, c, http.MethodGet, statusURL, f, nil)
			var pos position
			if kind(a, err, http.StatusOK) != kindOK || json.Unmarshal(a.Body, &pos) != nil || pos.Position != 1234 {
				b.Fatalf("poll: %v %d %s", err, a.Status, a.Body)
			}
		}
		b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	})
	b.Run("seat map page cold", func(b *testing.B) {
		seatsURL := srv.URL + "/events/7/seats"
		b.ReportAllocs()
		cpu0 := processCPU(b)
		for b.Loop() {
			a, err := send(ctx, c, http.MethodGet, seatsURL, f, nil, "text/html,application/xhtml+xml", "Accept-Encoding: "+pageEncodings)
			if kind(a, err, http.StatusOK) != kindOK || len(a.Body) != len(page) {
				b.Fatalf("seat map: %v %d", err, a.Status)
			}
		}
		b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	})
}

// processCPU returns this process's CPU time so far (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
