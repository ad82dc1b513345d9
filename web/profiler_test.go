package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
)

// The profiler answers /debug/pprof/ on its own listener.
func TestServeProfiler(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveProfiler(ln, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer srv.Close()
	for path, want := range map[string]int{"/debug/pprof/cmdline": http.StatusOK, "/debug/pprof/heap?debug=1": http.StatusOK, "/healthz": http.StatusNotFound} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
}
