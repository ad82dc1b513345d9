package chaos

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/e2e/invariant"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// Two instances of the binary on two ports, sharing PostgreSQL and Redis
// with no balancer in front, serve a whole sale: every request of every fan
// goes to either at random. Each fan signs up on one instance and its
// session is valid on the other; fans join, wait, race for the same seats,
// try to pass the limit, leave orders unpaid until they expire, hold, pay
// and see their orders confirmed, until the event sells out. Afterwards
// every invariant holds, the orders the fans saw confirmed (or expired)
// are exactly those PostgreSQL has, each confirmation reached the outbox
// stream once through the two relays, no request met a 5xx, no instance
// logged an error, both served, and one admitter admitted per tick: the
// ticks the instances took add up to at most the ticks that passed, their
// admissions to the fans the queue admitted, within the admission rate.
//
// Short: 40 fans, 60 seats. Long (storetest.ChaosLong): 400 fans, 600
// seats.
//
// On a Redis Cluster (REDIS_URL with addr= seeds, as `make test` runs this
// test a second time) it runs one sale per master, each with an event whose
// hash tag falls on that master.
func TestChaos_TwoInstances(t *testing.T) {
	masters, err := storetest.Masters(context.Background(), storetest.MustOpenRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(masters) == 1 {
		twoInstances(t, "")
		return
	}
	for i, m := range masters {
		t.Run(fmt.Sprintf("Master%d", i+1), func(t *testing.T) { twoInstances(t, m) })
	}
}

func twoInstances(t *testing.T, master string) {
	fans, rows, perRow, races, timeout := 40, 3, 10, 1, 3*time.Minute
	if storetest.ChaosLong() {
		fans, rows, perRow, races, timeout = 400, 15, 20, 5, 20*time.Minute
	}
	// Slow enough that each tick admits a small batch while fans wait: an
	// instance admitting a tick another one admitted would show.
	const rate = 20
	s := newSale(t, rows, perRow, rate, master)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	started := redisTime(t, s)
	// Orders left unpaid expire soon, on whichever instance's worker
	// comes first; the others are paid in well under this.
	const paymentWindow = 10 * time.Second
	env := append(s.env(), "PAYMENT_WINDOW="+paymentWindow.String())
	a := startInstance(t, "A", env...)
	// Both answer to A's address as their public BASE_URL, as instances
	// behind one name do: the PG sends every buyer back there, and each
	// sandbox refuses return addresses on any other origin.
	b := startInstance(t, "B", append(env, "BASE_URL="+a.URL)...)
	c := newCrowd(t, s, []*instance{a, b}, races)
	c.run(ctx, fans)

	// One admitter per tick, read before the end of the ticks counted.
	id := s.Event.ID
	event := map[string]string{"event": strconv.FormatInt(id, 10)}
	ticksA, ticksB := a.counter(t, "boxoffice_admission_ticks_total", nil), b.counter(t, "boxoffice_admission_ticks_total", nil)
	admitted := a.counter(t, "boxoffice_queue_admissions_total", event) + b.counter(t, "boxoffice_queue_admissions_total", event)
	ended := redisTime(t, s)
	first, last := boxoffice.TickIndex(started, admissionTick), boxoffice.TickIndex(ended, admissionTick)
	if ticks := ticksA + ticksB; ticks < 1 || ticks > float64(last-first+1) {
		t.Errorf("the instances took %v ticks (A %v, B %v) while %d passed, want 1 to %d: one admitter per tick",
			ticks, ticksA, ticksB, last-first+1, last-first+1)
	}
	locks := lockHolders(t, s)
	if len(locks) == 0 {
		t.Error("no tick lock in Redis, want those of the last minute's ticks")
	}
	for name, n := range locks {
		if name != a.Admitter && name != b.Admitter {
			t.Errorf("%d tick locks name %q, want the name of A (%s) or B (%s)", n, name, a.Admitter, b.Admitter)
		}
	}
	stats, err := (&store.Queue{Redis: s.Redis}).QueueStats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if admitted != float64(stats.AdmittedTotal) || stats.AdmittedTotal != c.admitted.Load() {
		t.Errorf("the instances counted %v admissions, the queue %d, the fans saw %d: want them equal",
			admitted, stats.AdmittedTotal, c.admitted.Load())
	}
	allowed := 0
	for tick := first; tick <= last; tick++ {
		allowed += boxoffice.AdmissionBatch(rate, admissionTick, tick)
	}
	if stats.AdmittedTotal > int64(allowed) {
		t.Errorf("the queue admitted %d fans over ticks %d to %d, want at most %d at %d fans/s",
			stats.AdmittedTotal, first, last, allowed, rate)
	}

	// The sale's outcome, in PostgreSQL and Redis.
	for _, r := range invariant.Check(ctx, s.DB, s.Redis, id) {
		if !r.OK {
			t.Errorf("invariant broken: %s: %s", r.Name, r.Detail)
		}
	}
	orders, err := s.DB.Pool.Query(ctx, `SELECT o.id, o.status, o.failure_code, count(ss.seat_label) FROM orders o
		LEFT JOIN sold_seat ss ON ss.order_id = o.id WHERE o.event_id = $1 GROUP BY o.id, o.status, o.failure_code`, id)
	if err != nil {
		t.Fatal(err)
	}
	inDB := map[string]int{} // confirmed order -> sold seats
	expired := 0
	for orders.Next() {
		var order, reason string
		var status boxoffice.OrderStatus
		var seats int
		if err := orders.Scan(&order, &status, &reason, &seats); err != nil {
			t.Fatal(err)
		}
		// An order its fan left unpaid is EXPIRED, or CANCELLED as replaced
		// once the fan checks out again (one unpaid order per account and
		// event, issue 16).
		left := status == boxoffice.OrderExpired || status == boxoffice.OrderCancelled && reason == boxoffice.ReasonReplaced
		switch {
		case left && c.expired[order] && seats == 0:
			expired++
		case status == boxoffice.OrderConfirmed:
			inDB[order] = seats
		default:
			t.Errorf("order %s is %s (%q) with %d sold seats in PostgreSQL, want it CONFIRMED, or EXPIRED (or CANCELLED as replaced by a later checkout) with none if its fan left it unpaid",
				order, status, reason, seats)
		}
	}
	if err := orders.Err(); err != nil {
		t.Fatal(err)
	}
	sold := 0
	for order, seats := range inDB {
		sold += seats
		if c.confirmed[order] != seats {
			t.Errorf("order %s has %d sold seats in PostgreSQL; the fan saw %d confirmed", order, seats, c.confirmed[order])
		}
	}
	for order, seats := range c.confirmed {
		if _, ok := inDB[order]; !ok {
			t.Errorf("the fan saw order %s confirmed with %d seats; PostgreSQL has no such order", order, seats)
		}
	}
	if sold != len(s.Seats) {
		t.Errorf("%d of %d seats sold, want the event sold out", sold, len(s.Seats))
		c.explainUnsold(ctx, t)
	}
	published := s.published(ctx, t)
	for order := range c.confirmed {
		if published[order] != 1 {
			t.Errorf("order %s's confirmation was published %d times, want once", order, published[order])
		}
	}
	for order, n := range published {
		if _, ok := c.confirmed[order]; !ok {
			t.Errorf("order %s's confirmation was published %d times; no fan saw it confirmed", order, n)
		}
	}
	if expired != len(c.expired) || expired == 0 {
		t.Errorf("%d orders EXPIRED or replaced in PostgreSQL, the fans left %d unpaid and saw them expire; want them equal, and at least 1", expired, len(c.expired))
	}
	for g, r := range c.races {
		if r.winners.Load() != 1 || r.losers.Load() != raceSize-1 {
			t.Errorf("race %d for %v: %d winners and %d losers, want 1 and %d", g, r.seats, r.winners.Load(), r.losers.Load(), raceSize-1)
		}
	}
	if c.limitHolding.Load() == 0 || c.limitOwning.Load() == 0 {
		t.Errorf("%d fans holding 5 seats and %d owning 5 were refused a sixth; want both tried and refused",
			c.limitHolding.Load(), c.limitOwning.Load())
	}
	for _, in := range []*instance{a, b} {
		if in.requests.Load() == 0 {
			t.Errorf("instance %s served no request, want both to serve", in.Name)
		}
		if n := in.errorLogs.Load(); n > 0 {
			t.Errorf("instance %s logged %d errors, want none", in.Name, n)
		}
	}
	// The fans who pay must do so within the payment window: on a machine
	// too busy for that, orders expire under them and some are refunded.
	var slowest float64
	if err := s.DB.Pool.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM max(confirmed_at - created_at)), 0)
		FROM orders WHERE event_id = $1 AND status = 'CONFIRMED'`, id).Scan(&slowest); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d fans, %d seats: %d orders confirmed (the slowest %.1f s after its checkout, of a %v window), %d expired; admitted %d (queue said sold out to %d, %d found no seat left); %d lost races outside the %d races; limit refusals %d holding, %d owning; requests A %d, B %d; ticks A %v, B %v of %d",
		fans, len(s.Seats), len(inDB), slowest, paymentWindow, expired, c.admitted.Load(), c.soldOutLine.Load(), c.noSeatLeft.Load(), c.racesLost.Load(), len(c.races),
		c.limitHolding.Load(), c.limitOwning.Load(), a.requests.Load(), b.requests.Load(), ticksA, ticksB, last-first+1)
}

// redisTime returns the time of the sale's Redis, the clock the admitters
// number their ticks by.
func redisTime(t *testing.T, s *sale) time.Time {
	t.Helper()
	now, err := s.Redis.Time(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// lockHolders counts the admission locks (admit:lock:<tick>, each kept a
// minute) under the sale's prefix by the instance name each holds.
func lockHolders(t *testing.T, s *sale) map[string]int {
	t.Helper()
	ctx := context.Background()
	out := map[string]int{}
	keys, err := storetest.Keys(ctx, s.Redis, s.Redis.Key("admit:lock:*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		v, err := s.Redis.Client.Get(ctx, k).Result()
		if err == nil {
			out[v]++
		}
	}
	return out
}
