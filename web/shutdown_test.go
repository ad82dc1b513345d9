package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// SIGTERM (a cancelled context) while requests, an SSE stream and the
// admitter run: the stream is told to reconnect and ends, requests in
// flight finish (each answers 200 or finds the door closed, never a 5xx or a
// cut-off answer), and run returns cleanly.
func TestRun_GracefulShutdown(t *testing.T) {
	ctx := context.Background()
	dbURL := storetest.NewDatabaseURL(t)
	db, err := store.OpenDB(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Seed(ctx, db, demo.Options{Password: "correct horse", BcryptCost: 4}); err != nil {
		t.Fatal(err)
	}
	// Paused: the fan stays in line, so the stream stays open.
	if _, err := db.Pool.Exec(ctx, `UPDATE event SET admission_paused = true WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, nil, env(map[string]string{
			"ADDR": fmt.Sprintf("127.0.0.1:%d", port), "DATABASE_URL": dbURL, "REDIS_URL": storetest.RedisURL(),
			"REDIS_PREFIX": storetest.NewRedisPrefix(), "ADMISSION_TICK": "100ms", "RATE_LIMITS": "off", "LOG_LEVEL": "error",
		}), io.Discard, io.Discard)
	}()
	jar, _ := cookiejar.New(nil)
	fan := &http.Client{Jar: jar}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/readyz"); err == nil && resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the binary did not become ready")
		}
	}
	post := func(path string, form url.Values) {
		resp, err := fan.PostForm(base+path, form)
		if err != nil || resp.StatusCode >= 400 {
			t.Fatalf("POST %s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	post("/login", url.Values{"email": {"fan1@boxoffice.test"}, "password": {"correct horse"}})
	post("/events/1/queue", url.Values{})

	stream, err := fan.Get(base + "/events/1/queue/stream")
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("open the stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(stream.Body)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	waitFor := func(prefix string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended before %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q line on the stream", prefix)
			}
		}
	}
	waitFor("event: position")

	// Requests keep coming while the server shuts down.
	var wg sync.WaitGroup
	stopLoad := make(chan struct{})
	var mu sync.Mutex
	var bad []string
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				resp, err := http.Get(base + "/events/1")
				if err != nil {
					continue // the listener is closed: the door, not a failure
				}
				body, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || rerr != nil || !strings.Contains(string(body), "</html>") {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("status %d, read error %v, %d bytes", resp.StatusCode, rerr, len(body)))
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	waitFor("retry: ")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after SIGTERM = %v, want a clean shutdown", err)
		}
	case <-time.After(shutdownGrace + 10*time.Second):
		t.Fatal("run did not return after the shutdown grace")
	}
	close(stopLoad)
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("%d requests were cut or failed during the shutdown, e.g. %s", len(bad), bad[0])
	}
	for range lines { // the stream must end, not hang
	}
}
