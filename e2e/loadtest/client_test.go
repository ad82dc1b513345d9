package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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
}

// BenchmarkFanPoll is the generator's side of a waiting fan's position
// poll, as the waiting phase sends it (call, kind, the position's JSON),
// against a loopback server that answers at once as the real one does:
// cpu-µs/op is the process's CPU a poll, the loopback server's trivial
// answer included (the same before and after a change of the client).
func BenchmarkFanPoll(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Vary", "Accept, Cookie, Accept-Encoding")
		if r.Method == http.MethodPost {
			h.Add("Set-Cookie", "boxoffice_queue_epoch=e1.5.3.3; Path=/events/7/queue; Max-Age=3600; HttpOnly; SameSite=Lax")
		}
		io.WriteString(w, `{"status":"waiting","position":1234,"ahead":1233,"eta_seconds":12}`+"\n")
	}))
	defer srv.Close()
	c := newClient(64)
	f := &Fan{Cookie: sessionCookie + "=tok"}
	ctx := context.Background()
	if _, err := call(ctx, c, http.MethodPost, srv.URL+"/events/7/queue", f, url.Values{}); err != nil {
		b.Fatal(err)
	}
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
}

// processCPU returns this process's CPU time so far (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
