package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
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

// A best-available pick near the sell-out, in a venue of 1,500 seats and
// in one of 15,000: grade R's front rows (nine in ten, best first) are sold
// out and the rest sold but for a pair in every four seats, 95% of the
// grade sold in all. Each pick is one for a pair with no fresh hint (the
// first of an instance or of a quantity, or one 2 s after the last), and
// its seats are released after it. Reported per pick: the round trips
// (scripts run), the seats whose lock keys they were given (each read
// unless the index rules its run out), and ns/op.
func BenchmarkHolds_HoldBest_NearSellOut(b *testing.B) {
	for _, seats := range []int{1500, 15000} {
		b.Run(fmt.Sprintf("seats=%d", seats), func(b *testing.B) {
			env := newHoldsEnv(b)
			ev := newHoldEvent(b, env.DB, seats)
			ctx := context.Background()
			rows := len(ev.R) / 50
			var sold []string
			for i, l := range ev.R {
				if i/50 < rows*9/10 || i%4 < 2 {
					sold = append(sold, l)
				}
			}
			sellSeats(b, env.DB, ev.ID, newHoldAccount(b, env.DB), sold...)
			clock := time.Now()
			env.R.Now = func() time.Time { return clock }
			var on bool
			var trips, sent int
			env.R.Client.AddHook(scriptHook{on: &on, trips: &trips, seats: &sent})
			pick := func(acct int64) {
				clock = clock.Add(3 * time.Second) // no fresh hint
				req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
				on = true
				res, err := env.H.HoldBest(ctx, req, "R", 2)
				on = false
				if err != nil {
					b.Fatalf("HoldBest: %v", err)
				}
				b.StopTimer()
				for _, l := range res.Held {
					if _, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: acct}, l); err != nil {
						b.Fatalf("Release %s: %v", l, err)
					}
				}
				b.StartTimer()
			}
			pick(1) // loads the sold seats (and, with the index, builds it)
			trips, sent = 0, 0
			b.ResetTimer()
			for i := range b.N {
				pick(int64(i + 2))
			}
			b.ReportMetric(float64(trips)/float64(b.N), "trips/op")
			b.ReportMetric(float64(sent)/float64(b.N), "seats/op")
		})
	}
}
