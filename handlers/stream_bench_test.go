package handlers_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// BenchmarkQueueStream_Memory measures the server's memory per open
// waiting-room stream, in process: Go's heap and goroutine stacks in use
// with N streams open (each fan's stream a bare TCP connection whose
// answers wait in the kernel, so that the client costs the process almost
// nothing), less the same before they opened, over N. It reports
// bytes/stream; make bench-sse measures the binary's resident set at 10,000
// streams. Run with -benchtime=1x: each iteration opens streamsPerRun more.
func BenchmarkQueueStream_Memory(b *testing.B) {
	const streamsPerRun = 1000
	app := newTestApp(b)
	ev := app.openEvent(b)
	ctx := context.Background()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var perStream float64
	for range b.N {
		requests := make([]string, streamsPerRun)
		for i := range requests {
			acct := int64(len(conns) + i + 1)
			sid := fmt.Sprintf("sid-%d", acct)
			token := app.benchSession(b, acct, sid)
			if _, err := app.Srv.Queue.Join(ctx, boxoffice.JoinRequest{EventID: ev.ID, AccountID: acct, SessionKey: sid}); err != nil {
				b.Fatal(err)
			}
			requests[i] = fmt.Sprintf("GET /events/%d/queue/stream HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nCookie: boxoffice_session=%s\r\n\r\n", ev.ID, token)
		}
		before := inUse()
		for _, req := range requests {
			c, err := net.Dial("tcp", strings.TrimPrefix(app.URL, "http://"))
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
			if _, err := c.Write([]byte(req)); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(5 * app.Srv.AdmissionTick) // every stream has had its fragments
		perStream = float64(inUse()-before) / streamsPerRun
	}
	b.ReportMetric(perStream, "bytes/stream")
}

// inUse returns the process's Go heap and goroutine stacks in use after a
// collection.
func inUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
