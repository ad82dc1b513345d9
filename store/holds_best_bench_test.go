package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/redis/go-redis/v9"
)

// scriptHook counts, while on, the scripts run (round trips) and the seats
// whose lock keys they were given.
type scriptHook struct {
	on           *bool
	trips, seats *int
}

func (scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); *h.on && (cmd.Name() == "evalsha" || cmd.Name() == "eval") && len(args) > 2 {
			n, _ := strconv.Atoi(fmt.Sprint(args[2]))
			*h.trips++
			for _, k := range args[3 : 3+n] {
				if strings.Contains(fmt.Sprint(k), "seat:lock:") {
					*h.seats++
				}
			}
		}
		return next(ctx, cmd)
	}
}

func (scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// redisCalls returns Redis's count of calls of each command since its
// start (INFO commandstats), those run by scripts included, and under
// "usec:<name>" the microseconds spent in them (a script's include those
// of the commands it ran); under "usec:cpu", the CPU time Redis used
// (INFO cpu, user and system), in microseconds.
func redisCalls(tb testing.TB, r *store.Redis) map[string]int64 {
	tb.Helper()
	info, err := r.Client.Info(context.Background(), "commandstats", "cpu").Result()
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	calls := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		for _, field := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), field); ok {
				sec, _ := strconv.ParseFloat(v, 64)
				calls["usec:cpu"] += int64(sec * 1e6)
			}
		}
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest+",", ',')], 10, 64)
		calls[name] = n
		if _, usec, ok := strings.Cut(rest, ",usec="); ok {
			n, _ := strconv.ParseInt(usec[:strings.IndexByte(usec+",", ',')], 10, 64)
			calls["usec:"+name] = n
		}
	}
	return calls
}

// commandCounter sums, over the spans it is started and stopped around,
// the commands Redis ran (its INFO excluded): on a Redis of its own, the
// commands of the scripts run in them as well as the scripts.
type commandCounter struct {
	tb     testing.TB
	r      *store.Redis
	before map[string]int64
	sum    map[string]int64
}

func newCommandCounter(tb testing.TB, r *store.Redis) *commandCounter {
	return &commandCounter{tb: tb, r: r, sum: map[string]int64{}}
}

func (c *commandCounter) start() { c.before = redisCalls(c.tb, c.r) }

func (c *commandCounter) stop() {
	for name, n := range redisCalls(c.tb, c.r) {
		if name != "info" && name != "usec:info" {
			c.sum[name] += n - c.before[name]
		}
	}
}

// report adds the commands per op (cmds/op), the microseconds Redis spent
// in scripts per op (script-µs/op), Redis's CPU time per op
// (redis-cpu-µs/op: its reads and writes of the connections included, and
// its own cron work), and the calls of the named commands
// (<name>/op) to b's results.
func (c *commandCounter) report(b *testing.B, names ...string) {
	var all int64
	for name, n := range c.sum {
		if !strings.HasPrefix(name, "usec:") {
			all += n
		}
	}
	b.ReportMetric(float64(all)/float64(b.N), "cmds/op")
	b.ReportMetric(float64(c.sum["usec:evalsha"]+c.sum["usec:eval"])/float64(b.N), "script-µs/op")
	b.ReportMetric(float64(c.sum["usec:cpu"])/float64(b.N), "redis-cpu-µs/op")
	for _, name := range names {
		b.ReportMetric(float64(c.sum[name])/float64(b.N), name+"/op")
	}
}

// A best-available pick near the sell-out, in a venue of 1,500 seats and
// in one of 15,000: grade R's front rows (nine in ten, best first) are
// taken and the rest taken but for a pair in every four seats, 95% of the
// grade in all; taken is sold, or held by other fans (by hand, 5 seats
// each), as in the last minute of a sale. Each pick is one for a pair with
// no fresh hint (the first of an instance or of a quantity, or one 2 s
// after the last), and its seats are released after it. Reported per pick:
// the round trips (scripts run), the seats whose lock keys they were given
// (each read unless the index rules its run out), the commands Redis ran
// (cmds/op, those of the scripts included; exact on a Redis of the
// benchmark's own), and ns/op.
func BenchmarkHolds_HoldBest_NearSellOut(b *testing.B) {
	for _, taken := range []string{"sold", "held"} {
		for _, seats := range []int{1500, 15000} {
			b.Run(fmt.Sprintf("%s/seats=%d", taken, seats), func(b *testing.B) {
				benchmarkNearSellOut(b, taken, seats)
			})
		}
	}
}

func benchmarkNearSellOut(b *testing.B, taken string, seats int) {
	env := newHoldsEnv(b)
	ev := newHoldEvent(b, env.DB, seats)
	ctx := context.Background()
	rows := len(ev.R) / 50
	var gone []string
	for i, l := range ev.R {
		if i/50 < rows*9/10 || i%4 < 2 {
			gone = append(gone, l)
		}
	}
	if taken == "sold" {
		sellSeats(b, env.DB, ev.ID, newHoldAccount(b, env.DB), gone...)
	} else {
		for i := 0; i < len(gone); i += limit {
			env.mustHold(b, ev.ID, int64(1000000+i), 10*time.Minute, gone[i:min(i+limit, len(gone))]...)
		}
	}
	clock := time.Now()
	env.R.Now = func() time.Time { return clock }
	var on bool
	var trips, sent int
	env.R.Client.AddHook(scriptHook{on: &on, trips: &trips, seats: &sent})
	cmds := newCommandCounter(b, env.R)
	pick := func(acct int64) {
		clock = clock.Add(3 * time.Second) // no fresh hint
		req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
		b.StopTimer()
		cmds.start()
		b.StartTimer()
		on = true
		res, err := env.H.HoldBest(ctx, req, "R", 2)
		on = false
		b.StopTimer()
		cmds.stop()
		if err != nil {
			b.Fatalf("HoldBest: %v", err)
		}
		for _, l := range res.Held {
			if _, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: acct}, l); err != nil {
				b.Fatalf("Release %s: %v", l, err)
			}
		}
		b.StartTimer()
	}
	pick(1) // loads the sold seats (and, with the index, builds it)
	trips, sent = 0, 0
	cmds = newCommandCounter(b, env.R)
	b.ResetTimer()
	for i := range b.N {
		pick(int64(i + 2))
	}
	b.ReportMetric(float64(trips)/float64(b.N), "trips/op")
	b.ReportMetric(float64(sent)/float64(b.N), "seats/op")
	cmds.report(b, "sismember", "get")
}
