package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// A late payment (the buyer's holds ended with its order) is confirmed while
// hundreds of rival accounts race to hold its seats, round after round.
// Rounds alternate between two attacks:
//   - "claim": the confirmation waits on the buyer's purchase_count row,
//     which the test holds, and the rivals start as the test lets it go (or
//     a few milliseconds later, varying by round: rivalDelays), so that their
//     holds race the confirmation's claim;
//   - "commit": the rivals start inside the confirmation's transaction (its
//     last step before the commit), which commits only once each rival has
//     tried, and they keep trying until the confirmation has returned: they
//     race the commit and the marking of the seats sold in Redis.
//
// Each rival holds one seat (one account each) and every success is
// recorded. Afterwards, for each seat of the order, exactly one of these is
// true, never both: it is sold to the buyer, or it is held by exactly one
// rival. The order is CONFIRMED with no rival ever holding any of its
// seats, or REFUNDED (seat_taken) with every seat held by a rival.
func TestChaos_ConfirmAgainstRivalHolds(t *testing.T) {
	t.Parallel()
	rounds, rivals := 8, 150
	if storetest.ChaosLong() {
		rounds, rivals = 40, 600
	}
	const seats = 3
	env := checkouttest.New(t, rounds*seats)
	ctx := context.Background()
	ev := env.Event
	ended := map[string]int{} // attack and order status -> rounds
	for round := range rounds {
		labels := ev.Labels[round*seats : (round+1)*seats]
		o := env.Order(t, env.Account(t), labels...)
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		env.Expire(t)
		if mine, _ := env.MyHolds(t, o.AccountID); len(mine) != 0 {
			t.Fatalf("round %d: the buyer still holds %v after the expiry", round, mine)
		}

		var mu sync.Mutex
		won := map[string][]int64{} // seat -> rivals whose hold succeeded
		confirmed := make(chan struct{})
		// rival tries to hold its seat: once, or until it holds it or the
		// confirmation has returned; tried is called after the first try.
		rival := func(i int, retry bool, tried func()) {
			acct := int64(round*rivals + i + 1) // rivals exist only in Redis
			seat := labels[i%seats]
			req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
			for first := true; ; first = false {
				_, err := env.Holds.Hold(ctx, req, []string{seat})
				if err == nil {
					mu.Lock()
					won[seat] = append(won[seat], acct)
					mu.Unlock()
				} else if boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
					t.Errorf("round %d: rival %d holds %s: %v", round, acct, seat, err)
				}
				if first {
					tried()
				}
				select {
				case <-confirmed:
					return
				default:
				}
				if err == nil || !retry {
					return
				}
			}
		}
		var c *boxoffice.Confirmation
		var err error
		attack := "claim"
		if round%2 == 1 {
			attack = "commit"
		}
		switch attack {
		case "claim":
			release := lockPurchases(t, env, o.AccountID)
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer close(confirmed)
				c, err = env.Redirect(o.ID, key, amount)
			}()
			waitForLockWait(t, env)
			delay := rivalDelays[round/2%len(rivalDelays)]
			storetest.AtOnce(rivals+1, func(i int) {
				if i == rivals {
					release()
					return
				}
				time.Sleep(delay)
				rival(i, false, func() {})
			})
			<-done
		case "commit":
			var tries sync.WaitGroup
			tries.Add(rivals)
			var rivalsDone sync.WaitGroup
			store.SetBeforeCommit(env.Orders, func(orderID, _ string) {
				if orderID != o.ID {
					return
				}
				for i := range rivals {
					rivalsDone.Go(func() { rival(i, true, tries.Done) })
				}
				tries.Wait()
			})
			c, err = env.Redirect(o.ID, key, amount)
			close(confirmed)
			rivalsDone.Wait()
			store.SetBeforeCommit(env.Orders, nil)
		}
		if err != nil {
			t.Fatalf("round %d (%s): confirm: %v", round, attack, err)
		}

		got := env.FindOrder(t, o.ID)
		ended[attack+" "+string(got.Status)]++
		if c.Order.Status != got.Status {
			t.Errorf("round %d (%s): the confirmation answered %s, the order is %s", round, attack, c.Order.Status, got.Status)
		}
		switch got.Status {
		case boxoffice.OrderConfirmed:
		case boxoffice.OrderRefunded:
			checkouttest.WantOrder(t, got, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
			if attack == "commit" {
				t.Errorf("round %d (commit): refunded although no rival had started before the claim", round)
			}
		default:
			t.Fatalf("round %d (%s): order %s, want CONFIRMED or REFUNDED", round, attack, got.Status)
		}
		for _, seat := range labels {
			sold := env.Count(t, `SELECT count(*) FROM sold_seat WHERE event_id = $1 AND seat_label = $2 AND order_id = $3`,
				ev.ID, seat, o.ID) == 1
			holders := won[seat]
			switch {
			case sold && len(holders) == 0:
				if lock := lockOf(env, t, seat); lock != "" {
					t.Errorf("round %d (%s): seat %s sold, still held by %s in Redis", round, attack, seat, lock)
				}
			case !sold && len(holders) == 1:
				if lock := lockOf(env, t, seat); lock != acctID(holders[0]) {
					t.Errorf("round %d (%s): seat %s held by rival %d, its lock says %q", round, attack, seat, holders[0], lock)
				}
			default:
				t.Errorf("round %d (%s): seat %s: sold to the buyer %v, held by rivals %v; want exactly one of the two",
					round, attack, seat, sold, holders)
			}
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("%d rounds of %d rivals for %d seats: %v", rounds, rivals, seats, ended)
	env.CheckInvariants(t)
}

// rivalDelays are how long after the confirmation may go on the rivals of
// a "claim" round start, in turn: about as long as the confirmation takes to
// reach its claim on the development machine, and either side of it, so
// that either may win.
var rivalDelays = []time.Duration{0, 1500 * time.Microsecond, 3 * time.Millisecond, 2 * time.Millisecond,
	time.Millisecond, 2500 * time.Microsecond}

// lockPurchases holds the account's purchase_count row FOR UPDATE in a
// transaction of the test, so that a confirmation for the account waits,
// until the returned function (or the test's end) ends it.
func lockPurchases(tb testing.TB, env *checkouttest.Env, accountID int64) func() {
	tb.Helper()
	ctx := context.Background()
	tx, err := env.DB.Pool.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { tx.Rollback(ctx) }) }
	tb.Cleanup(release)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM purchase_count WHERE event_id = $1 AND account_id = $2 FOR UPDATE`,
		env.Event.ID, accountID); err != nil {
		tb.Fatal(err)
	}
	return release
}

// waitForLockWait waits until a session of the env's database waits on a
// lock (for 30 s at most).
func waitForLockWait(tb testing.TB, env *checkouttest.Env) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if env.Count(tb, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("the confirmation never waited on the test's lock")
		}
	}
}

// wantHeldForBuyer checks that each of seats shows held to the rival and
// mine to the buyer on the seat map's statuses of event eventID.
func wantHeldForBuyer(tb testing.TB, env *checkouttest.Env, eventID, rival, buyer int64, seats []string) {
	tb.Helper()
	ctx := context.Background()
	others, err := env.Holds.SeatStatuses(ctx, boxoffice.Shopper{EventID: eventID, AccountID: rival})
	if err != nil {
		tb.Fatal(err)
	}
	buyers, err := env.Holds.SeatStatuses(ctx, boxoffice.Shopper{EventID: eventID, AccountID: buyer})
	if err != nil {
		tb.Fatal(err)
	}
	for _, seat := range seats {
		if others.Status(seat) != boxoffice.SeatHeld || buyers.Status(seat) != boxoffice.SeatMine {
			tb.Errorf("seat %s shows %s to others and %s to the buyer, want held and mine", seat, others.Status(seat), buyers.Status(seat))
		}
	}
}

// lockOf returns the account id in a seat's hold key, or "" without one.
func lockOf(env *checkouttest.Env, tb testing.TB, label string) string {
	tb.Helper()
	v, err := env.R.Client.Get(context.Background(), env.R.Key("seat:lock:{%d}:%s", env.Event.ID, label)).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	} else if err != nil {
		tb.Fatalf("GET lock %s: %v", label, err)
	}
	return v
}

// redisDown makes a Redis client fail every command while it is on, as if
// Redis did not answer.
type redisDown struct{ on atomic.Bool }

var errRedisDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (h *redisDown) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *redisDown) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() {
			cmd.SetErr(errRedisDown)
			return errRedisDown
		}
		return next(ctx, cmd)
	}
}

func (h *redisDown) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.on.Load() {
			for _, cmd := range cmds {
				cmd.SetErr(errRedisDown)
			}
			return errRedisDown
		}
		return next(ctx, cmds)
	}
}

// Redis does not answer from the commit of a late payment's confirmation
// until it has returned, so that MarkSold fails: the sale is confirmed all
// the same, and the claim keeps its seats from every other account (shown
// held on the seat map, theirs on the buyer's) for longer than the sold-seat
// cache's marker and a load can take; once the marker has ended, the next
// hold loads the cache from PostgreSQL, which has the sale, so the seats stay
// refused after the claim has ended too.
func TestOrders_Confirm_MarkSoldFails(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 10)
	ctx := context.Background()
	ev := env.Event
	seats := []string{ev.R[0], ev.R[1]}
	o := env.Order(t, env.Account(t), seats...)
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	env.Expire(t)
	rival := env.Account(t)
	req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: rival, Limit: limit, TTL: holdTTL}
	tryHold := func(labels ...string) error {
		_, err := env.Holds.Hold(ctx, req, labels)
		return err
	}
	if err := tryHold(ev.R[2]); err != nil { // the sold-seat cache is loaded and marked
		t.Fatal(err)
	}

	down := &redisDown{}
	env.R.Client.AddHook(down)
	store.SetBeforeCommit(env.Orders, func(string, string) { down.on.Store(true) })
	c := env.MustRedirect(t, o.ID, key, amount)
	down.on.Store(false)
	checkouttest.WantOrder(t, c.Order, boxoffice.OrderConfirmed, "")
	soldKey := env.R.Key("sold:{%d}", ev.ID)
	if n, err := env.R.Client.SMIsMember(ctx, soldKey, seats[0], seats[1]).Result(); err != nil || slices.Contains(n, true) {
		t.Fatalf("sold:{e} has the seats (%v, %v): MarkSold did not fail", n, err)
	}

	for _, seat := range seats {
		wantError(t, tryHold(seat), boxoffice.ESEATTAKEN)
		if lock := lockOf(env, t, seat); lock != acctID(o.AccountID) {
			t.Errorf("lock of %s = %q, want the buyer %d", seat, lock, o.AccountID)
		}
	}
	wantHeldForBuyer(t, env, ev.ID, rival, o.AccountID, seats)
	if mine, _ := env.MyHolds(t, o.AccountID); !slices.Equal(mine, seats) {
		t.Errorf("the buyer's holds %v, want %v", mine, seats)
	}
	// A load that read PostgreSQL before the commit (and so misses the sale)
	// sets a marker less than a load's timeout after it, which then lasts
	// the marker's TTL: the claim must outlast both.
	for _, seat := range seats {
		claimTTL, err := env.R.Client.PTTL(ctx, env.R.Key("seat:lock:{%d}:%s", ev.ID, seat)).Result()
		if err != nil || claimTTL < store.DefaultSoldCacheTTL+store.LoadTimeout {
			t.Errorf("claim of %s ends in %v (%v), want at least the marker's TTL %v plus a load's %v",
				seat, claimTTL, err, store.DefaultSoldCacheTTL, store.LoadTimeout)
		}
	}

	// The marker ends (as its TTL would), then the claims (as theirs would).
	if err := env.R.Client.Del(ctx, env.R.Key("cache:ready:{%d}", ev.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	wantError(t, tryHold(seats[0]), boxoffice.ESEATTAKEN)
	if n, err := env.R.Client.SMIsMember(ctx, soldKey, seats[0], seats[1]).Result(); err != nil || slices.Contains(n, false) {
		t.Errorf("sold:{e} has the seats %v (%v) after the load, want both", n, err)
	}
	for _, seat := range seats {
		if err := env.R.Client.Del(ctx, env.R.Key("seat:lock:{%d}:%s", ev.ID, seat)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, seat := range seats {
		wantError(t, tryHold(seat), boxoffice.ESEATTAKEN)
	}
	env.CheckInvariants(t)
}

// A payment confirmed within its order's window, its seats still held by
// the buyer past the claim's end (the checkout extended them to the order's
// expiry): the claim keeps each hold as it is (expiry, the buyer's zset,
// the indexes) and only records the claim, and when MarkSold then fails
// the holds still keep the seats from every other account for longer than
// a claim would, shown held to others and mine to the buyer.
func TestOrders_Confirm_ClaimKeepsLongerHolds(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 10)
	ctx := context.Background()
	ev := env.Event
	seats := []string{ev.R[0], ev.R[1]}
	o := env.Order(t, env.Account(t), seats...)
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	holdKey := env.R.Key("hold:{%d}:%d", ev.ID, o.AccountID)
	before := map[string]int64{}
	for _, seat := range seats {
		ends, err := env.R.Client.PExpireTime(ctx, env.R.Key("seat:lock:{%d}:%s", ev.ID, seat)).Result()
		if err != nil {
			t.Fatal(err)
		}
		before[seat] = ends.Milliseconds()
	}

	down := &redisDown{}
	env.R.Client.AddHook(down)
	store.SetBeforeCommit(env.Orders, func(string, string) { down.on.Store(true) })
	c := env.MustRedirect(t, o.ID, key, amount)
	down.on.Store(false)
	checkouttest.WantOrder(t, c.Order, boxoffice.OrderConfirmed, "")

	claimed, err := env.R.Client.ZMScore(ctx, env.R.Key("claimed:{%d}", ev.ID), seats...).Result()
	if err != nil {
		t.Fatal(err)
	}
	minTTL := store.DefaultSoldCacheTTL + store.LoadTimeout
	for i, seat := range seats {
		if claimed[i] == 0 {
			t.Errorf("claimed:{e} has no record of %s", seat)
		}
		ends, err := env.R.Client.PExpireTime(ctx, env.R.Key("seat:lock:{%d}:%s", ev.ID, seat)).Result()
		if err != nil || ends.Milliseconds() != before[seat] {
			t.Errorf("lock of %s ends at %v (%v), want kept at %d", seat, ends, err, before[seat])
		}
		if ttl := time.Until(time.UnixMilli(before[seat])); ttl < minTTL {
			t.Errorf("hold of %s ends in %v, want more than the claim's %v (the order's window)", seat, ttl, minTTL)
		}
		for _, k := range []string{holdKey, env.R.Key("held:{%d}", ev.ID)} {
			if score, err := env.R.Client.ZScore(ctx, k, seat).Result(); err != nil || int64(score) != before[seat] {
				t.Errorf("%s has %s at %v (%v), want %d", k, seat, score, err, before[seat])
			}
		}
		if lock := lockOf(env, t, seat); lock != acctID(o.AccountID) {
			t.Errorf("lock of %s = %q, want the buyer %d", seat, lock, o.AccountID)
		}
	}
	rival := env.Account(t)
	_, err = env.Holds.Hold(ctx, boxoffice.HoldRequest{EventID: ev.ID, AccountID: rival, Limit: limit, TTL: holdTTL}, seats[:1])
	wantError(t, err, boxoffice.ESEATTAKEN)
	wantHeldForBuyer(t, env, ev.ID, rival, o.AccountID, seats)
	env.CheckInvariants(t)
}

// As TestOrders_Confirm_MarkSoldFails, MarkSold fails after the commit;
// then another instance loses PostgreSQL, for longer than the sold-seat
// cache's TTL and the claim (the test ends both, as their TTLs would). That
// instance holds on Redis's copy, which misses the sale: the seats must stay
// refused all the same, while other seats are held; once PostgreSQL answers
// again, the cache has the sale.
func TestOrders_Confirm_MarkSoldFailsThenPostgresDown(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 10)
	ctx := context.Background()
	ev := env.Event
	seats := []string{ev.R[0], ev.R[1]}
	o := env.Order(t, env.Account(t), seats...)
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	env.Expire(t)
	other, err := store.NewHolds(env.DB, env.R, nil) // the instance that loses PostgreSQL
	if err != nil {
		t.Fatal(err)
	}
	rival := env.Account(t)
	tryHold := func(labels ...string) error {
		req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: rival, Limit: limit, TTL: holdTTL}
		_, err := other.Hold(ctx, req, labels)
		return err
	}
	if err := tryHold(ev.R[2]); err != nil { // the cache is loaded, the instance knows the seats
		t.Fatal(err)
	}

	down := &redisDown{}
	env.R.Client.AddHook(down)
	store.SetBeforeCommit(env.Orders, func(string, string) { down.on.Store(true) })
	c := env.MustRedirect(t, o.ID, key, amount)
	down.on.Store(false)
	checkouttest.WantOrder(t, c.Order, boxoffice.OrderConfirmed, "")
	soldKey := env.R.Key("sold:{%d}", ev.ID)
	if n, err := env.R.Client.SMIsMember(ctx, soldKey, seats[0], seats[1]).Result(); err != nil || slices.Contains(n, true) {
		t.Fatalf("sold:{e} has the seats (%v, %v): MarkSold did not fail", n, err)
	}

	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/boxoffice") // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	other.DB = &store.DB{Pool: pool, Now: time.Now}
	ends := []string{env.R.Key("cache:ready:{%d}", ev.ID)}
	for _, seat := range seats {
		ends = append(ends, env.R.Key("seat:lock:{%d}:%s", ev.ID, seat))
	}
	if err := env.R.Client.Del(ctx, ends...).Err(); err != nil {
		t.Fatal(err)
	}
	for _, seat := range seats {
		wantError(t, tryHold(seat), boxoffice.ESEATTAKEN)
	}
	if err := tryHold(ev.R[3]); err != nil {
		t.Errorf("holding a free seat on Redis's copy while PostgreSQL is down: %v", err)
	}
	if n := env.R.Client.Exists(ctx, ends[0]).Val(); n != 0 {
		t.Fatal("the sold-seat cache was loaded, so the test ran no hold on a copy past its TTL")
	}

	other.DB = env.DB
	for _, seat := range seats {
		wantError(t, tryHold(seat), boxoffice.ESEATTAKEN)
	}
	if n, err := env.R.Client.SMIsMember(ctx, soldKey, seats[0], seats[1]).Result(); err != nil || slices.Contains(n, false) {
		t.Errorf("sold:{e} has the seats %v (%v) once PostgreSQL is back, want both", n, err)
	}
	env.CheckInvariants(t)
}

// A payment in time for an order one of whose seats' holds ended (Redis lost
// them: the buyer cannot release a seat of its order awaiting payment) and
// another account bought meanwhile, while the hold of a second ended too and
// the buyer kept the third: the claim takes the two seats no hold of the buyer
// covered, the sale fails on the sold one and the payment is refunded; the
// refund ends the claim on the seat sold to nobody at once, and the buyer
// keeps its own hold as it was.
func TestOrders_Confirm_RefundEndsClaim(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 10)
	ctx := context.Background()
	ev := env.Event
	buyer := env.Account(t)
	o := env.Order(t, buyer, ev.R[0], ev.R[1], ev.R[2])
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	for _, seat := range ev.R[1:3] {
		if err := store.EndHold(ctx, env.Holds, ev.ID, buyer, seat); err != nil {
			t.Fatal(err)
		}
	}
	other := env.Order(t, env.Account(t), ev.R[1])
	k2, a2 := env.Pay(t, other, sandbox.ScenarioWebhookNever)
	checkouttest.WantOrder(t, env.MustRedirect(t, other.ID, k2, a2).Order, boxoffice.OrderConfirmed, "")
	ownKey := env.R.Key("seat:lock:{%d}:%s", ev.ID, ev.R[0])
	kept, err := env.R.Client.PExpireTime(ctx, ownKey).Result()
	if err != nil || kept <= 0 {
		t.Fatalf("the buyer's hold of %s expires at %v (%v), want a time", ev.R[0], kept, err)
	}

	c := env.MustRedirect(t, o.ID, key, amount)
	checkouttest.WantOrder(t, c.Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
	if lock := lockOf(env, t, ev.R[2]); lock != "" {
		t.Errorf("seat %s sold to nobody still held by %q after the refund, want free", ev.R[2], lock)
	}
	rival := boxoffice.HoldRequest{EventID: ev.ID, AccountID: env.Account(t), Limit: limit, TTL: holdTTL}
	if _, err := env.Holds.Hold(ctx, rival, []string{ev.R[2]}); err != nil {
		t.Errorf("another account holds %s after the refund: %v, want it held", ev.R[2], err)
	}
	mine, _ := env.MyHolds(t, buyer)
	expires, err := env.R.Client.PExpireTime(ctx, ownKey).Result()
	if !slices.Equal(mine, []string{ev.R[0]}) || err != nil || expires != kept {
		t.Errorf("the buyer's holds %v, %s expiring at %v (%v); want %v, expiring at %v as before", mine, ev.R[0], expires, err, ev.R[:1], kept)
	}
	env.CheckInvariants(t)
}
