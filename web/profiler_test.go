package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
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

// Blocking is sampled only while a request for the block profile runs: a
// wait before the request and one after it are not recorded, one during
// its window is, and the profile is not served without a window.
func TestServeProfiler_BlockWindow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveProfiler(ln, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/debug/pprof/"

	for _, name := range []string{"block", "mutex"} {
		resp, err := http.Get(base + name)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET /debug/pprof/%s without seconds = %d, want 400", name, resp.StatusCode)
		}
	}

	waitBefore()
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(base + "block?seconds=1")
		if err == nil {
			var n int64
			n, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && (resp.StatusCode != http.StatusOK || n == 0) {
				err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
			}
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // the request is in its window
	waitDuring()
	if err := <-done; err != nil {
		t.Fatalf("GET /debug/pprof/block?seconds=1: %v", err)
	}
	waitAfter()

	for fn, want := range map[string]bool{"waitBefore": false, "waitDuring": true, "waitAfter": false} {
		if got := blockRecorded(fn); got != want {
			t.Errorf("a wait in %s recorded: %v, want %v", fn, got, want)
		}
	}
}

// waitBefore, waitDuring and waitAfter each wait 20 ms on a channel, each
// from its own stack.
func waitBefore() { <-time.After(20 * time.Millisecond) }
func waitDuring() { <-time.After(20 * time.Millisecond) }
func waitAfter()  { <-time.After(20 * time.Millisecond) }

// blockRecorded reports whether the block profile has a record whose stack
// passes through the function of this package named fn.
func blockRecorded(fn string) bool {
	n, _ := runtime.BlockProfile(nil)
	recs := make([]runtime.BlockProfileRecord, n+16)
	n, _ = runtime.BlockProfile(recs)
	for _, r := range recs[:n] {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.HasSuffix(f.Function, "."+fn) {
				return true
			}
			if !more {
				break
			}
		}
	}
	return false
}
