package checkout_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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
// not counted), the CPU time of PostgreSQL's processes when it runs on this
// machine (pgCPU: the store's statements and the sandbox's, and whatever else
// that server ran meanwhile) and the app's calls to the PG (confirms and
// look-ups). Run it
// with a fixed count, such as -benchtime=300x: docs/performance.md, "The paying
// path's CPU in the server".
func BenchmarkPaidOrder_CPU(b *testing.B) {
	env := checkouttest.New(b, b.N)
	pg := env.Gateway()
	buyers := env.HoldOneEach(b, b.N)
	calls := pg.Confirms.Load() + pg.LookUps.Load()
	cpu := processCPU(b)
	postmaster, pgBefore, pgOK := pgCPU(b, env)
	b.ReportAllocs()
	b.ResetTimer()
	env.PayAll(b, buyers, 16)
	env.SB.Wait()
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/n, "cpu-µs/op")
	if pgOK {
		b.ReportMetric(float64((pgCPUOf(b, postmaster)-pgBefore).Microseconds())/n, "pg-cpu-µs/op")
	}
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

// pgCPU returns the process id of the env's PostgreSQL server (its
// postmaster) and the CPU time its processes have used (pgCPUOf), and false
// when the server's processes cannot be read here (it runs elsewhere, or
// /proc is not Linux's).
func pgCPU(tb testing.TB, env *checkouttest.Env) (int, time.Duration, bool) {
	tb.Helper()
	var backend int
	if err := env.DB.Pool.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		tb.Fatal(err)
	}
	f, err := procStat(backend)
	if err != nil {
		return 0, 0, false
	}
	postmaster, _ := strconv.Atoi(f[1])
	if _, err := procStat(postmaster); err != nil {
		return 0, 0, false
	}
	return postmaster, pgCPUOf(tb, postmaster), true
}

// pgCPUOf returns the CPU time, user and system, of the postmaster's
// children that run now and of those it has reaped (its cutime and cstime),
// so that a backend that ends between two readings keeps its time.
func pgCPUOf(tb testing.TB, postmaster int) time.Duration {
	tb.Helper()
	f, err := procStat(postmaster)
	if err != nil {
		tb.Fatal(err)
	}
	ticks := atoi(f[13]) + atoi(f[14]) // cutime, cstime (fields 16 and 17)
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	parent := strconv.Itoa(postmaster)
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if f, err := procStat(pid); err == nil && f[1] == parent {
			ticks += atoi(f[11]) + atoi(f[12]) // utime, stime (fields 14 and 15)
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// procStat returns the fields of /proc/<pid>/stat after the command's
// name: the state first (field 3), the parent's id second.
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(s[i+1:]), nil
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
