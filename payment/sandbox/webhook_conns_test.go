package sandbox_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// Webhooks sent at once keep their connections to the app open for the next ones
// (Config.HTTP nil: toss.KeepAliveTransport): in a sale the sandbox sends one a
// payment, hundreds at once, and net/http's default transport, which keeps 2
// idle connections, had the app accept and close a new connection for nearly
// every one (docs/performance.md, "The paying path's CPU in the server"). Two
// rounds of `inFlight` webhooks held at the app until all of a round arrived:
// the second round opens no connection.
func TestSandbox_WebhookConnectionsReused(t *testing.T) {
	const inFlight = 24
	var opened atomic.Int64
	var mu sync.Mutex
	arrived, round := 0, make(chan struct{})
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		wait := round
		if arrived++; arrived == inFlight {
			close(round)
			arrived, round = 0, make(chan struct{})
		}
		mu.Unlock()
		<-wait
	}))
	app.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	app.Start()
	t.Cleanup(app.Close)
	h := newHarness(t, func(c *sandbox.Config) { c.WebhookURL = app.URL })
	for r := range 2 {
		keys := make([]string, inFlight)
		for i := range keys {
			keys[i] = h.pay(t, fmt.Sprintf("order-conns-%d-%d", r, i), 1000, "").Get("paymentKey")
		}
		before := opened.Load()
		storetest.AtOnce(inFlight, func(i int) { mustConfirm(t, h, keys[i], fmt.Sprintf("order-conns-%d-%d", r, i), 1000) })
		h.sb.Wait()
		n := opened.Load() - before
		t.Logf("round %d: %d webhooks at once opened %d connections", r, inFlight, n)
		if r == 1 && n != 0 {
			t.Errorf("the second round of %d webhooks opened %d connections to the app, want 0 (the first round's kept open)", inFlight, n)
		}
	}
}
