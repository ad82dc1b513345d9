package checkout_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/checkout/checkouttest"
)

// BenchmarkPaidOrder_CPU pays for orders 16 at a time, as fans do: the checkout
// (CreateOrder), the payment on the sandbox PG's checkout page, the success
// redirect's confirmation (the PG's confirm and look-up over HTTP), the
// sandbox's webhook to the test server (handed to Service.ConfirmWebhook as the
// app's handler does) and the order's read; the holds are taken first, outside
// the timer. Besides the time and the allocations it reports, per paid order,
// the CPU time of this process (user and system, from getrusage: the app's side
// and the sandbox's, both in this binary as in the server; PostgreSQL and Redis
// not counted) and the app's calls to the PG (confirms and look-ups). Run it
// with a fixed count, such as -benchtime=300x: docs/performance.md, "The paying
// path's CPU in the server".
func BenchmarkPaidOrder_CPU(b *testing.B) {
	env := checkouttest.New(b, b.N)
	pg := env.Gateway()
	buyers := env.HoldOneEach(b, b.N)
	calls := pg.Confirms.Load() + pg.LookUps.Load()
	cpu := processCPU(b)
	b.ReportAllocs()
	b.ResetTimer()
	env.PayAll(b, buyers, 16)
	env.SB.Wait()
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/n, "cpu-µs/op")
	b.ReportMetric(float64(pg.Confirms.Load()+pg.LookUps.Load()-calls)/n, "pg-calls/op")
	b.ReportMetric(n/b.Elapsed().Seconds(), "paid/s")
	env.CheckInvariants(b)
}

// processCPU returns the CPU time this process has used, user and system.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
