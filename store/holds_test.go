package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

const (
	holdTTL = time.Minute
	limit   = boxoffice.DefaultMaxPerAccount
)

// holdsEnv is a Holds on its own database and Redis key prefix.
type holdsEnv struct {
	H   *store.Holds
	DB  *store.DB
	R   *store.Redis
	Reg *prometheus.Registry
}

func newHoldsEnv(tb testing.TB) holdsEnv {
	tb.Helper()
	env := holdsEnv{DB: storetest.MustOpenDB(tb), R: storetest.MustOpenRedis(tb), Reg: prometheus.NewRegistry()}
	env.H = env.instance(tb, env.Reg)
	return env
}

// instance returns another Holds on the same database and Redis, as another
// process of the service would be. Its SeatStatuses reads everything on every
// call (MapMaxAge 0), so that tests see each change at once;
// TestHolds_SeatStatuses_Shared tests the shared read.
func (env holdsEnv) instance(tb testing.TB, reg prometheus.Registerer) *store.Holds {
	tb.Helper()
	h, err := store.NewHolds(env.DB, env.R, reg)
	if err != nil {
		tb.Fatalf("NewHolds: %v", err)
	}
	h.MapMaxAge = 0
	return h
}

func (env holdsEnv) hold(eventID, acct int64, ttl time.Duration, labels ...string) (boxoffice.HoldResult, error) {
	req := boxoffice.HoldRequest{EventID: eventID, AccountID: acct, Limit: limit, TTL: ttl}
	return env.H.Hold(context.Background(), req, labels)
}

func (env holdsEnv) mustHold(tb testing.TB, eventID, acct int64, ttl time.Duration, labels ...string) boxoffice.HoldResult {
	tb.Helper()
	res, err := env.hold(eventID, acct, ttl, labels...)
	if err != nil {
		tb.Fatalf("account %d holds %v: %v", acct, labels, err)
	}
	return res
}

// lock returns the account id in a seat's lock key, or "" when there is none.
func (env holdsEnv) lock(tb testing.TB, eventID int64, label string) string {
	tb.Helper()
	v, err := env.R.Client.Get(context.Background(), env.R.Key("seat:lock:{%d}:%s", eventID, label)).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	} else if err != nil {
		tb.Fatalf("GET lock %s: %v", label, err)
	}
	return v
}

func (env holdsEnv) statuses(tb testing.TB, eventID, acct int64) boxoffice.SeatMapState {
	tb.Helper()
	st, err := env.H.SeatStatuses(context.Background(), boxoffice.Shopper{EventID: eventID, AccountID: acct})
	if err != nil {
		tb.Fatalf("SeatStatuses(%d, %d): %v", eventID, acct, err)
	}
	return st
}

func (env holdsEnv) myHolds(tb testing.TB, eventID, acct int64) ([]string, time.Duration) {
	tb.Helper()
	labels, ttl, err := env.H.MyHolds(context.Background(), eventID, acct)
	if err != nil {
		tb.Fatalf("MyHolds(%d, %d): %v", eventID, acct, err)
	}
	return labels, ttl
}

// wantError is storetest.WantError.
var wantError = storetest.WantError

func acctID(a int64) string { return fmt.Sprint(a) }

// A seat asked for again keeps its hold's expiry, a later one included (as
// an order's payment window sets it), and the answer says so.
func TestHolds_Hold_AgainKeepsItsExpiry(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 40)
	first := env.mustHold(t, ev.ID, 5, 10*holdTTL, ev.R[9])
	again := env.mustHold(t, ev.ID, 5, holdTTL, ev.R[9])
	if !again.ExpiresAt.Equal(first.ExpiresAt) || again.TTL <= holdTTL {
		t.Errorf("asked again: expires at %v (TTL %v), want the first hold's %v", again.ExpiresAt, again.TTL, first.ExpiresAt)
	}
	if first.Added != 1 || again.Added != 0 {
		t.Errorf("added %d, then %d asked again; want 1, then 0", first.Added, again.Added)
	}
	if more := env.mustHold(t, ev.ID, 5, holdTTL, ev.R[9], ev.R[10]); more.Added != 1 || len(more.Held) != 2 {
		t.Errorf("a held seat and a new one: added %d of %v, want 1 of 2", more.Added, more.Held)
	}
	pexp, err := env.R.Client.PExpireTime(context.Background(), env.R.Key("seat:lock:{%d}:%s", ev.ID, ev.R[9])).Result()
	if err != nil || pexp != time.Duration(first.ExpiresAt.UnixMilli())*time.Millisecond {
		t.Errorf("lock expires at %v (%v), want %d ms", pexp, err, first.ExpiresAt.UnixMilli())
	}
}

func TestHolds_Hold(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 40)
	other := newHoldEvent(t, env.DB, 200)
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		res := env.mustHold(t, ev.ID, 1, holdTTL, ev.R[0], ev.S[0])
		if !slices.Equal(res.Held, []string{ev.R[0], ev.S[0]}) {
			t.Errorf("Held = %v, want %v", res.Held, []string{ev.R[0], ev.S[0]})
		}
		if res.TTL != holdTTL {
			t.Errorf("TTL = %v, want %v", res.TTL, holdTTL)
		}
		for _, l := range res.Held {
			if got := env.lock(t, ev.ID, l); got != "1" {
				t.Errorf("lock of %s = %q, want account 1", l, got)
			}
			pexp, err := env.R.Client.PExpireTime(ctx, env.R.Key("seat:lock:{%d}:%s", ev.ID, l)).Result()
			if err != nil || pexp != time.Duration(res.ExpiresAt.UnixMilli())*time.Millisecond {
				t.Errorf("lock of %s expires at %v (%v), want %d ms", l, pexp, err, res.ExpiresAt.UnixMilli())
			}
		}
		holder, _ := env.R.Client.HGet(ctx, env.R.Key("holder:{%d}", ev.ID), ev.R[0]).Result()
		if holder != "1" {
			t.Errorf("holder index of %s = %q, want 1", ev.R[0], holder)
		}
	})

	t.Run("HeldAgainCountsOnce", func(t *testing.T) {
		first := env.mustHold(t, ev.ID, 2, 30*time.Second, ev.R[1])
		req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: 2, Limit: 2, TTL: holdTTL}
		res, err := env.H.Hold(ctx, req, []string{ev.R[1], ev.R[2]})
		if err != nil {
			t.Fatalf("holding own seat again with a new one under limit 2: %v", err)
		}
		if !res.ExpiresAt.Equal(first.ExpiresAt) || res.TTL > 30*time.Second {
			t.Errorf("got expiry %v and TTL %v, want the first hold's %v (held again keeps its expiry)", res.ExpiresAt, res.TTL, first.ExpiresAt)
		}
		if _, err := env.H.Hold(ctx, req, []string{ev.R[2], ev.R[1]}); err != nil {
			t.Errorf("holding both own seats again: %v", err)
		}
		if mine, _ := env.myHolds(t, ev.ID, 2); !slices.Equal(mine, []string{ev.R[1], ev.R[2]}) {
			t.Errorf("MyHolds = %v, want %v", mine, []string{ev.R[1], ev.R[2]})
		}
		_, err = env.H.Hold(ctx, req, []string{ev.R[3]})
		wantError(t, err, boxoffice.ELIMITEXCEEDED)
	})

	t.Run("ErrSeatTaken", func(t *testing.T) {
		_, err := env.hold(ev.ID, 3, holdTTL, ev.R[5], ev.R[0], ev.S[0])
		e := wantError(t, err, boxoffice.ESEATTAKEN)
		if got := e.Details["seats"]; !slices.Equal(got.([]string), []string{ev.R[0], ev.S[0]}) {
			t.Errorf("Details[seats] = %v, want %v", got, []string{ev.R[0], ev.S[0]})
		}
		if got := env.lock(t, ev.ID, ev.R[5]); got != "" {
			t.Errorf("free seat %s of a refused hold is held by %q", ev.R[5], got)
		}
	})

	t.Run("ErrBadSeat", func(t *testing.T) {
		before, _ := storetest.Keys(ctx, env.R, env.R.Prefix+"*")
		tests := []struct {
			name   string
			labels []string
			seats  []string
		}{
			{"None", nil, nil},
			{"MoreThanLimit", ev.Labels[10:16], nil},
			{"Malformed", []string{ev.R[10], "A-1-01"}, []string{"A-1-01"}},
			{"Empty", []string{""}, []string{""}},
			{"Duplicate", []string{ev.R[10], ev.S[10], ev.R[10]}, []string{ev.R[10]}},
			{"Unknown", []string{ev.R[10], "A-99-1"}, []string{"A-99-1"}},
			{"OtherEvent", []string{ev.R[10], other.R[60]}, []string{other.R[60]}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := env.hold(ev.ID, 4, holdTTL, tt.labels...)
				e := wantError(t, err, boxoffice.EBADSEAT)
				got, _ := e.Details["seats"].([]string)
				if !slices.Equal(got, tt.seats) {
					t.Errorf("Details[seats] = %v, want %v", got, tt.seats)
				}
			})
		}
		after, _ := storetest.Keys(ctx, env.R, env.R.Prefix+"*")
		slices.Sort(before)
		slices.Sort(after)
		if !slices.Equal(before, after) {
			t.Errorf("bad holds changed Redis keys: before %v, after %v", before, after)
		}
	})

	t.Run("Metrics", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		h := env.instance(t, reg)
		req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: 5, Limit: 1, TTL: holdTTL}
		h.Hold(ctx, req, []string{ev.S[18]})
		h.Hold(ctx, req, []string{ev.S[19]})
		h.Hold(ctx, req, []string{ev.R[0]})
		h.Hold(ctx, req, []string{"nope"})
		h.Hold(ctx, req, nil)
		h.HoldBest(ctx, req, "R", 1) // past the limit
		h.HoldBest(ctx, req, "Z", 1)
		want := `
# HELP boxoffice_holds_granted_total Seat hold requests granted.
# TYPE boxoffice_holds_granted_total counter
boxoffice_holds_granted_total 1
# HELP boxoffice_holds_refused_total Seat hold requests refused, by reason (the error code).
# TYPE boxoffice_holds_refused_total counter
boxoffice_holds_refused_total{reason="bad_choice"} 2
boxoffice_holds_refused_total{reason="bad_seat"} 2
boxoffice_holds_refused_total{reason="limit_exceeded"} 1
boxoffice_holds_refused_total{reason="not_together"} 0
boxoffice_holds_refused_total{reason="seat_taken"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
		if _, err := store.NewHolds(env.DB, env.R, reg); err == nil {
			t.Error("registering the metrics twice on one registry: got no error")
		}
	})
}

// TestHolds_Hold_OneSeat has 500 accounts hold one seat at the same moment,
// 50 times over: exactly one wins each time.
func TestHolds_Hold_OneSeat(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	const rounds, fans = 50, 500
	ev := newHoldEvent(t, env.DB, rounds)
	for r := range rounds {
		seat := ev.Labels[r]
		var winners atomic.Int64
		var winner atomic.Int64
		errs := make(chan error, fans)
		storetest.AtOnce(fans, func(i int) {
			acct := int64(r*fans + i + 1)
			_, err := env.hold(ev.ID, acct, holdTTL, seat)
			if err == nil {
				winners.Add(1)
				winner.Store(acct)
			} else if boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
				errs <- err
			}
		})
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: a loser got %v, want seat_taken", r, err)
		}
		if n := winners.Load(); n != 1 {
			t.Fatalf("round %d: %d accounts hold seat %s, want 1", r, n, seat)
		}
		if got := env.lock(t, ev.ID, seat); got != acctID(winner.Load()) {
			t.Fatalf("round %d: lock of %s = %q, want the winner %d", r, seat, got, winner.Load())
		}
	}
}

// TestHolds_Hold_Overlapping races holds of [A1, A2] against [A2, A3]: one of
// them wins whole, and no seat is ever held in part or by two accounts.
func TestHolds_Hold_Overlapping(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	const rounds, fans = 60, 200
	ev := newHoldEvent(t, env.DB, 3*rounds)
	for r := range rounds {
		a1, a2, a3 := ev.Labels[3*r], ev.Labels[3*r+1], ev.Labels[3*r+2]
		var mu sync.Mutex
		var won []int
		storetest.AtOnce(fans, func(i int) {
			seats := []string{a1, a2}
			if i%2 == 1 {
				seats = []string{a2, a3}
			}
			_, err := env.hold(ev.ID, int64(r*fans+i+1), holdTTL, seats...)
			switch boxoffice.ErrorCode(err) {
			case "":
				mu.Lock()
				won = append(won, i)
				mu.Unlock()
			case boxoffice.ESEATTAKEN:
			default:
				t.Errorf("round %d: account %d got %v, want seat_taken", r, r*fans+i+1, err)
			}
		})
		if len(won) != 1 {
			t.Fatalf("round %d: %d holds granted, want 1", r, len(won))
		}
		w := acctID(int64(r*fans + won[0] + 1))
		want := []string{w, w, ""}
		if won[0]%2 == 1 {
			want = []string{"", w, w}
		}
		got := []string{env.lock(t, ev.ID, a1), env.lock(t, ev.ID, a2), env.lock(t, ev.ID, a3)}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: holders of %s, %s, %s = %q, want %q", r, a1, a2, a3, got, want)
		}
	}
}

// TestHolds_Hold_Limit checks the per-account limit across grades, tabs and
// time: live holds plus bought tickets plus new seats never pass it.
func TestHolds_Hold_Limit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("BoughtThreeSixTabs", func(t *testing.T) {
		env := newHoldsEnv(t)
		const rounds = 30
		ev := newHoldEvent(t, env.DB, 20*rounds)
		for r := range rounds {
			var seats []string
			for k := range 5 { // R and S mixed
				seats = append(seats, ev.R[5*r+k], ev.S[5*r+k])
			}
			acct := newHoldAccount(t, env.DB)
			total := sellSeats(t, env.DB, ev.ID, acct, seats[0], seats[1], seats[2])
			if r%2 == 0 {
				if err := env.H.MarkSold(ctx, ev.ID, acct, seats[:3], total); err != nil {
					t.Fatalf("MarkSold: %v", err)
				}
			} else {
				forgetRedis(t, env.R) // bought comes back from PostgreSQL
			}
			var granted atomic.Int64
			storetest.AtOnce(6, func(i int) {
				_, err := env.hold(ev.ID, acct, holdTTL, seats[3+i])
				if err == nil {
					granted.Add(1)
					return
				}
				e := wantError(t, err, boxoffice.ELIMITEXCEEDED)
				if e.Details["limit"] != limit || e.Details["owned"] != 3 || e.Details["held"] != 2 {
					t.Errorf("round %d: Details = %v, want limit 5, owned 3, held 2", r, e.Details)
				}
			})
			if n := granted.Load(); n != 2 {
				t.Fatalf("round %d: %d of 6 holds granted to an account that bought 3, want 2", r, n)
			}
			if st := env.statuses(t, ev.ID, acct); st.Owned != 3 || len(st.Mine) != 2 || st.Left(limit) != 0 {
				t.Fatalf("round %d: owned %d, mine %v, left %d; want 3, two seats, 0", r, st.Owned, st.Mine, st.Left(limit))
			}
		}
	})

	t.Run("HundredsOfTabs", func(t *testing.T) {
		env := newHoldsEnv(t)
		const rounds, tabs = 10, 300
		ev := newHoldEvent(t, env.DB, rounds*tabs)
		for r := range rounds {
			acct := int64(r + 1)
			var granted atomic.Int64
			storetest.AtOnce(tabs, func(i int) {
				if _, err := env.hold(ev.ID, acct, holdTTL, ev.Labels[r*tabs+i]); err == nil {
					granted.Add(1)
				} else if boxoffice.ErrorCode(err) != boxoffice.ELIMITEXCEEDED {
					t.Errorf("round %d: got %v, want limit_exceeded", r, err)
				}
			})
			if n := granted.Load(); n != limit {
				t.Fatalf("round %d: %d of %d holds granted, want %d", r, n, tabs, limit)
			}
		}
	})

	t.Run("SixthAfterRelease", func(t *testing.T) {
		env := newHoldsEnv(t)
		ev := newHoldEvent(t, env.DB, 20)
		env.mustHold(t, ev.ID, 1, holdTTL, ev.R[0], ev.S[0], ev.R[1])
		env.mustHold(t, ev.ID, 1, holdTTL, ev.S[1], ev.R[2])
		_, err := env.hold(ev.ID, 1, holdTTL, ev.S[2])
		e := wantError(t, err, boxoffice.ELIMITEXCEEDED)
		if e.Details["held"] != 5 || e.Details["owned"] != 0 {
			t.Errorf("Details = %v, want held 5, owned 0", e.Details)
		}
		if _, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}, ev.R[1]); err != nil {
			t.Fatalf("Release: %v", err)
		}
		env.mustHold(t, ev.ID, 1, holdTTL, ev.S[2])
		_, err = env.hold(ev.ID, 1, holdTTL, ev.R[1])
		wantError(t, err, boxoffice.ELIMITEXCEEDED)
	})

	t.Run("SixthAfterExpiry", func(t *testing.T) {
		env := newHoldsEnv(t)
		ev := newHoldEvent(t, env.DB, 20)
		env.mustHold(t, ev.ID, 1, holdTTL, ev.R[0], ev.S[0], ev.R[1], ev.S[1])
		short := env.mustHold(t, ev.ID, 1, time.Second, ev.R[2])
		_, err := env.hold(ev.ID, 1, holdTTL, ev.S[2])
		wantError(t, err, boxoffice.ELIMITEXCEEDED)
		time.Sleep(short.TTL + 50*time.Millisecond)
		env.mustHold(t, ev.ID, 1, holdTTL, ev.S[2])
		if mine, _ := env.myHolds(t, ev.ID, 1); len(mine) != 5 || slices.Contains(mine, ev.R[2]) {
			t.Errorf("MyHolds = %v, want 5 seats without the expired %s", mine, ev.R[2])
		}
	})
}

// TestHolds_Hold_Expiry checks that a seat is free the moment its hold ends,
// with no background job, and that the holder's count follows.
func TestHolds_Hold_Expiry(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 10)
	ctx := context.Background()
	seat := ev.R[0]
	first := env.mustHold(t, ev.ID, 1, time.Second, seat)
	_, err := env.hold(ev.ID, 2, holdTTL, seat)
	wantError(t, err, boxoffice.ESEATTAKEN)
	if got := env.statuses(t, ev.ID, 2).Status(seat); got != boxoffice.SeatHeld {
		t.Errorf("status for another account = %q, want held", got)
	}
	if st := env.statuses(t, ev.ID, 1); st.Status(seat) != boxoffice.SeatMine || st.HoldsTTL <= 0 || st.HoldsTTL > time.Second {
		t.Errorf("holder sees %q with %v left, want mine with (0, 1s]", st.Status(seat), st.HoldsTTL)
	}

	time.Sleep(first.TTL + 50*time.Millisecond)
	for _, acct := range []int64{1, 2} {
		if got := env.statuses(t, ev.ID, acct).Status(seat); got != boxoffice.SeatFree {
			t.Errorf("after expiry, account %d sees %q, want free", acct, got)
		}
	}
	if mine, ttl := env.myHolds(t, ev.ID, 1); len(mine) != 0 || ttl != 0 {
		t.Errorf("after expiry, MyHolds = %v, %v; want none, 0", mine, ttl)
	}
	env.mustHold(t, ev.ID, 2, holdTTL, seat)
	req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: 1, Limit: 1, TTL: holdTTL}
	if _, err := env.H.Hold(ctx, req, []string{ev.R[1]}); err != nil {
		t.Errorf("under limit 1 after the hold expired: %v", err)
	}
}

// TestHolds_Hold_ExpiryRace has 200 accounts try a held seat over and over
// while its 1-second hold runs out: one gets it, and only after the expiry.
func TestHolds_Hold_ExpiryRace(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	const rounds, fans = 3, 200
	ev := newHoldEvent(t, env.DB, rounds)
	for r := range rounds {
		seat := ev.Labels[r]
		first := env.mustHold(t, ev.ID, 1, time.Second, seat)
		var winners atomic.Int64
		var won atomic.Pointer[boxoffice.HoldResult]
		storetest.AtOnce(fans, func(i int) {
			for winners.Load() == 0 {
				res, err := env.hold(ev.ID, int64(1000*(r+1)+i), holdTTL, seat)
				if err == nil {
					winners.Add(1)
					won.Store(&res)
					return
				} else if boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
					t.Errorf("got %v, want seat_taken", err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
		if n := winners.Load(); n != 1 {
			t.Fatalf("round %d: %d winners, want 1", r, n)
		}
		grantedAt := won.Load().ExpiresAt.Add(-won.Load().TTL)
		if !grantedAt.After(first.ExpiresAt) {
			t.Fatalf("round %d: seat held again at %v, not after the first hold's expiry %v", r, grantedAt, first.ExpiresAt)
		}
	}
}

// TestHolds_Hold_Sold checks that a sold seat cannot be held, from
// PostgreSQL, after MarkSold, and after Redis lost its data, even when
// instances load the cache at the same moment.
func TestHolds_Hold_Sold(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 100)
	ctx := context.Background()
	buyer := newHoldAccount(t, env.DB)
	sellSeats(t, env.DB, ev.ID, buyer, ev.R[0])

	_, err := env.hold(ev.ID, 1, holdTTL, ev.R[0])
	if e := wantError(t, err, boxoffice.ESEATTAKEN); !slices.Equal(e.Details["seats"].([]string), []string{ev.R[0]}) {
		t.Errorf("Details[seats] = %v, want %v", e.Details["seats"], ev.R[0])
	}

	env.mustHold(t, ev.ID, buyer, holdTTL, ev.S[0])
	total := sellSeats(t, env.DB, ev.ID, buyer, ev.S[0])
	if err := env.H.MarkSold(ctx, ev.ID, buyer, []string{ev.S[0]}, total); err != nil {
		t.Fatalf("MarkSold: %v", err)
	}
	_, err = env.hold(ev.ID, 1, holdTTL, ev.S[0])
	wantError(t, err, boxoffice.ESEATTAKEN)

	instances := []*store.Holds{env.H, env.instance(t, nil), env.instance(t, nil)}
	for r := range 10 {
		forgetRedis(t, env.R)
		var granted atomic.Int64
		storetest.AtOnce(300, func(i int) {
			req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: int64(i + 1), Limit: limit, TTL: holdTTL}
			seat := []string{ev.R[0], ev.S[0]}[i%2]
			_, err := instances[i%3].Hold(ctx, req, []string{seat})
			if err == nil {
				granted.Add(1)
			} else if boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
				t.Errorf("round %d: got %v, want seat_taken", r, err)
			}
		})
		if n := granted.Load(); n != 0 {
			t.Fatalf("round %d: %d holds of sold seats granted after Redis lost its data", r, n)
		}
	}
	st := env.statuses(t, ev.ID, buyer)
	if st.Status(ev.R[0]) != boxoffice.SeatSold || st.Status(ev.S[0]) != boxoffice.SeatSold || st.Owned != 2 {
		t.Errorf("after reload: %s %q, %s %q, owned %d; want sold, sold, 2", ev.R[0], st.Status(ev.R[0]), ev.S[0], st.Status(ev.S[0]), st.Owned)
	}
	req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: buyer, Limit: 3, TTL: holdTTL}
	_, err = env.H.Hold(ctx, req, []string{ev.R[1], ev.S[1]})
	wantError(t, err, boxoffice.ELIMITEXCEEDED)
}

// TestHolds_Hold_SaleDuringLoad races a load of the sold-seat cache with a
// sale and its MarkSold: the sold seat is never forgotten.
func TestHolds_Hold_SaleDuringLoad(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	const rounds = 40
	ev := newHoldEvent(t, env.DB, rounds)
	ctx := context.Background()
	buyer := newHoldAccount(t, env.DB)
	for r := range rounds {
		forgetRedis(t, env.R)
		seat := ev.Labels[r]
		storetest.AtOnce(2, func(i int) {
			if i == 0 {
				env.statuses(t, ev.ID, 1)
				return
			}
			total := sellSeats(t, env.DB, ev.ID, buyer, seat)
			if err := env.H.MarkSold(ctx, ev.ID, buyer, []string{seat}, total); err != nil {
				t.Errorf("MarkSold: %v", err)
			}
		})
		if got := env.statuses(t, ev.ID, 1).Status(seat); got != boxoffice.SeatSold {
			t.Fatalf("round %d: seat sold during a cache load shows %q, want sold", r, got)
		}
		if got := env.statuses(t, ev.ID, buyer).Owned; got != r+1 {
			t.Fatalf("round %d: owned %d, want %d", r, got, r+1)
		}
	}
}

// TestHolds_Hold_LostDuringLoad loses Redis's data (as FLUSHALL does) while
// a load of the sold-seat cache is between its PostgreSQL read and its
// write, just after a sale committed and was marked sold: the load must not
// leave a cache that misses the sale, so the seat is never held.
func TestHolds_Hold_LostDuringLoad(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 10)
	ctx := context.Background()
	buyer := newHoldAccount(t, env.DB)
	seat := ev.R[0]
	var loads atomic.Int64
	store.SetAfterSoldRead(env.H, func() {
		if loads.Add(1) > 1 {
			return
		}
		total := sellSeats(t, env.DB, ev.ID, buyer, seat)
		if err := env.H.MarkSold(ctx, ev.ID, buyer, []string{seat}, total); err != nil {
			t.Errorf("MarkSold: %v", err)
		}
		forgetRedis(t, env.R)
	})
	_, err := env.hold(ev.ID, 1, holdTTL, seat)
	wantError(t, err, boxoffice.ESEATTAKEN)
	if n := loads.Load(); n != 2 {
		t.Errorf("%d loads, want 2: the one Redis's loss voided, and another", n)
	}
	if st := env.statuses(t, ev.ID, buyer); st.Owned != 1 || st.Status(seat) != boxoffice.SeatSold {
		t.Errorf("after the reload: owned %d, %s %q; want 1, sold", st.Owned, seat, st.Status(seat))
	}
	if keys, err := storetest.Keys(ctx, env.R, env.R.Prefix+"cache:loading:*"); err != nil || len(keys) != 0 {
		t.Errorf("load keys left: %v, %v", keys, err)
	}
}

// TestHolds_Hold_LostDuringEveryLoad loses Redis's data during every try of
// a load of the sold-seat cache: the hold fails, and neither the freshness
// nor the completeness marker is set, so that a copy that may miss a sale is
// never used, fresh or stale.
func TestHolds_Hold_LostDuringEveryLoad(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 10)
	ctx := context.Background()
	store.SetAfterSoldRead(env.H, func() { forgetRedis(t, env.R) })
	if _, err := env.hold(ev.ID, 1, holdTTL, ev.R[0]); err == nil {
		t.Fatal("held a seat although Redis lost its data during every load")
	}
	ready, complete := env.R.Key("cache:ready:{%d}", ev.ID), env.R.Key("cache:complete:{%d}", ev.ID)
	if n, err := env.R.Client.Exists(ctx, ready, complete).Result(); err != nil || n != 0 {
		t.Errorf("%d cache markers set (%v), want none", n, err)
	}
}

// TestHolds_ClaimRecords checks what ends the record of a claim in
// claimed:{e}: a load of the sold-seat cache drops one made long before it
// (its sale committed, if at all, before the load read PostgreSQL), keeps a
// recent one, and MarkSold of the seat drops it.
func TestHolds_ClaimRecords(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 10)
	ctx := context.Background()
	claimed := env.R.Key("claimed:{%d}", ev.ID)
	now, err := env.R.Client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	old, recent := ev.R[0], ev.R[1]
	err = env.R.Client.ZAdd(ctx, claimed,
		redis.Z{Score: float64(now.Add(-time.Hour).UnixMilli()), Member: old},
		redis.Z{Score: float64(now.UnixMilli()), Member: recent}).Err()
	if err != nil {
		t.Fatal(err)
	}
	env.mustHold(t, ev.ID, 1, holdTTL, ev.S[0]) // loads the cache
	if got := env.R.Client.ZRange(ctx, claimed, 0, -1).Val(); !slices.Equal(got, []string{recent}) {
		t.Errorf("claim records after a load: %v, want [%s]", got, recent)
	}
	if err := env.H.MarkSold(ctx, ev.ID, 2, []string{recent}, 1); err != nil {
		t.Fatal(err)
	}
	if n := env.R.Client.ZCard(ctx, claimed).Val(); n != 0 {
		t.Errorf("%d claim records after MarkSold, want none", n)
	}
}

func TestHolds_Release(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 10)
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		env.mustHold(t, ev.ID, 1, holdTTL, ev.R[0], ev.R[1])
		if _, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}, ev.R[0]); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if got := env.lock(t, ev.ID, ev.R[0]); got != "" {
			t.Errorf("released seat is held by %q", got)
		}
		if got := env.statuses(t, ev.ID, 2).Status(ev.R[0]); got != boxoffice.SeatFree {
			t.Errorf("released seat shows %q, want free", got)
		}
		if mine, _ := env.myHolds(t, ev.ID, 1); !slices.Equal(mine, []string{ev.R[1]}) {
			t.Errorf("MyHolds = %v, want %v", mine, []string{ev.R[1]})
		}
		env.mustHold(t, ev.ID, 2, holdTTL, ev.R[0])
	})

	t.Run("ErrNotFoundOtherAccount", func(t *testing.T) {
		res := env.mustHold(t, ev.ID, 3, holdTTL, ev.S[0])
		key := env.R.Key("seat:lock:{%d}:%s", ev.ID, ev.S[0])
		storetest.AtOnce(200, func(i int) {
			_, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: int64(100 + i)}, ev.S[0])
			if boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
				t.Errorf("account %d releasing account 3's seat: got %v, want not_found", 100+i, err)
			}
		})
		if got := env.lock(t, ev.ID, ev.S[0]); got != "3" {
			t.Errorf("lock = %q, want account 3", got)
		}
		if pexp, _ := env.R.Client.PExpireTime(ctx, key).Result(); pexp != time.Duration(res.ExpiresAt.UnixMilli())*time.Millisecond {
			t.Errorf("lock expiry = %v, want unchanged %d ms", pexp, res.ExpiresAt.UnixMilli())
		}
		if mine, _ := env.myHolds(t, ev.ID, 3); !slices.Equal(mine, []string{ev.S[0]}) {
			t.Errorf("holder's MyHolds = %v, want %v", mine, []string{ev.S[0]})
		}
		if got := env.statuses(t, ev.ID, 100).Status(ev.S[0]); got != boxoffice.SeatHeld {
			t.Errorf("status for others = %q, want held", got)
		}
	})

	t.Run("ErrNotFoundNotHeld", func(t *testing.T) {
		_, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}, ev.S[4])
		wantError(t, err, boxoffice.ENOTFOUND)
	})

	t.Run("ErrBadSeat", func(t *testing.T) {
		_, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}, "Z-1-1")
		wantError(t, err, boxoffice.EBADSEAT)
		_, err = env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}, "not a seat")
		wantError(t, err, boxoffice.EBADSEAT)
	})
}

// countHook counts the commands and pipelines a Redis client sends, and the
// pipelines of more than 8 commands (MULTI, EXEC and 6 reads: the time, the
// sold-seat cache's markers, the bought count, the holds and which are in an
// order): those that read an event's shared part in SeatStatuses. What go-redis sends to set up a new
// connection is not counted.
type countHook struct{ single, pipelines, big atomic.Int64 }

func connSetup(cmd redis.Cmder) bool {
	return slices.Contains([]string{"hello", "client", "auth", "select"}, cmd.Name())
}

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !connSetup(cmd) {
			h.single.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || connSetup(cmds[0]) {
			return next(ctx, cmds)
		}
		h.pipelines.Add(1)
		if len(cmds) > 8 {
			h.big.Add(1)
		}
		return next(ctx, cmds)
	}
}

func TestHolds_SeatStatuses(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 3000)
	ctx := context.Background()
	buyer := newHoldAccount(t, env.DB)
	sellSeats(t, env.DB, ev.ID, buyer, ev.S[0])

	env.mustHold(t, ev.ID, 1, 10*time.Second, ev.R[1])
	env.mustHold(t, ev.ID, 1, holdTTL, ev.R[0])
	env.mustHold(t, ev.ID, 2, holdTTL, ev.S[1])
	st := env.statuses(t, ev.ID, 1)
	want := map[string]boxoffice.SeatStatus{
		ev.R[0]: boxoffice.SeatMine, ev.R[1]: boxoffice.SeatMine,
		ev.S[1]: boxoffice.SeatHeld, ev.S[0]: boxoffice.SeatSold,
	}
	if len(st.Statuses) != len(want) {
		t.Errorf("Statuses = %v, want %v", st.Statuses, want)
	}
	for l, s := range want {
		if st.Status(l) != s {
			t.Errorf("Status(%s) = %q, want %q", l, st.Status(l), s)
		}
	}
	if !slices.Equal(st.Mine, []string{ev.R[0], ev.R[1]}) {
		t.Errorf("Mine = %v, want %v", st.Mine, []string{ev.R[0], ev.R[1]})
	}
	if st.HoldsTTL <= 5*time.Second || st.HoldsTTL > 10*time.Second {
		t.Errorf("HoldsTTL = %v, want the first hold's, at most 10s", st.HoldsTTL)
	}
	if st.Owned != 0 || st.Left(limit) != 3 {
		t.Errorf("Owned = %d, Left = %d; want 0, 3", st.Owned, st.Left(limit))
	}
	if redisNow, _ := env.R.Client.Time(ctx).Result(); st.Now.After(redisNow) || redisNow.Sub(st.Now) > 5*time.Second {
		t.Errorf("Now = %v, want Redis's clock (%v)", st.Now, redisNow)
	}
	if b := env.statuses(t, ev.ID, buyer); b.Owned != 1 || b.Left(limit) != 4 || len(b.Mine) != 0 || b.HoldsTTL != 0 {
		t.Errorf("buyer: owned %d, left %d, mine %v, TTL %v; want 1, 4, none, 0", b.Owned, b.Left(limit), b.Mine, b.HoldsTTL)
	}

	t.Run("Refresh", func(t *testing.T) {
		if _, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 2}, ev.S[1]); err != nil {
			t.Fatal(err)
		}
		env.mustHold(t, ev.ID, 3, holdTTL, ev.S[2])
		st := env.statuses(t, ev.ID, 1)
		if st.Status(ev.S[1]) != boxoffice.SeatFree || st.Status(ev.S[2]) != boxoffice.SeatHeld {
			t.Errorf("after release and hold: %q, %q; want free, held", st.Status(ev.S[1]), st.Status(ev.S[2]))
		}
		if st := env.statuses(t, ev.ID, 3); st.Status(ev.S[2]) != boxoffice.SeatMine || st.HoldsTTL <= holdTTL-5*time.Second {
			t.Errorf("holder sees %q with %v left, want mine with about %v", st.Status(ev.S[2]), st.HoldsTTL, holdTTL)
		}
	})

	t.Run("ConstantRoundTrips", func(t *testing.T) {
		for i := 10; i < 1490; i += 4 {
			env.mustHold(t, ev.ID, int64(1000+i), holdTTL, ev.R[i:i+4]...)
		}
		hook := &countHook{}
		env.R.Client.AddHook(hook)
		st := env.statuses(t, ev.ID, 1)
		if n := len(st.Statuses); n < 1480 {
			t.Fatalf("%d seats not free, want over 1480", n)
		}
		if s, p := hook.single.Load(), hook.pipelines.Load(); s != 0 || p != 1 {
			t.Errorf("one refresh sent %d commands and %d pipelines, want 0 and 1", s, p)
		}
	})

	t.Run("AfterRedisLost", func(t *testing.T) {
		forgetRedis(t, env.R)
		st := env.statuses(t, ev.ID, buyer)
		if st.Status(ev.S[0]) != boxoffice.SeatSold || st.Owned != 1 || len(st.Statuses) != 1 {
			t.Errorf("after Redis lost its data: %v, owned %d; want only %s sold, owned 1", st.Statuses, st.Owned, ev.S[0])
		}
	})

	t.Run("LoadsManySoldSeats", func(t *testing.T) {
		forgetRedis(t, env.R)
		big := newHoldAccount(t, env.DB)
		sellSeats(t, env.DB, ev.ID, big, ev.S[100:]...)
		st := env.statuses(t, ev.ID, big)
		if len(st.Statuses) != 1401 || st.Status(ev.S[0]) != boxoffice.SeatSold || st.Status(ev.S[1499]) != boxoffice.SeatSold || st.Owned != 1400 {
			t.Errorf("%d seats not free, owned %d; want 1401 sold, owned 1400", len(st.Statuses), st.Owned)
		}
	})
}

// TestHolds_SeatStatuses_Shared checks SeatStatuses with a shared read of
// the event's part: the account's own part is always exact, expiries are
// honoured at once, others' changes show once the read is MapMaxAge old, and
// of many concurrent callers one reads the event's part again.
func TestHolds_SeatStatuses_Shared(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 40)
	ctx := context.Background()
	h, err := store.NewHolds(env.DB, env.R, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.MapMaxAge = time.Minute
	var clock atomic.Int64 // the store's clock, in minutes, for the shared read's age
	env.R.Now = func() time.Time { return time.Unix(60*clock.Load(), 0) }
	statuses := func(acct int64) boxoffice.SeatMapState {
		t.Helper()
		st, err := h.SeatStatuses(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: acct})
		if err != nil {
			t.Fatalf("SeatStatuses: %v", err)
		}
		return st
	}
	a, b, c, d := ev.R[0], ev.R[1], ev.S[0], ev.S[1]
	env.mustHold(t, ev.ID, 1, holdTTL, a)
	short := env.mustHold(t, ev.ID, 4, time.Second, d)
	if st := statuses(2); st.Status(a) != boxoffice.SeatHeld || st.Status(d) != boxoffice.SeatHeld {
		t.Fatalf("first read: %q, %q; want held, held", st.Status(a), st.Status(d))
	}
	env.mustHold(t, ev.ID, 3, holdTTL, b)
	if _, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}, a); err != nil {
		t.Fatal(err)
	}
	env.mustHold(t, ev.ID, 2, holdTTL, c)
	time.Sleep(short.TTL + 50*time.Millisecond)

	st := statuses(2)
	want := map[string]boxoffice.SeatStatus{
		a: boxoffice.SeatHeld, // released since the shared read: shows late
		b: boxoffice.SeatFree, // held since the shared read: shows late
		c: boxoffice.SeatMine, // the account's own part is exact
		d: boxoffice.SeatFree, // expired: never shows held
	}
	for l, w := range want {
		if st.Status(l) != w {
			t.Errorf("account 2 sees %s %q, want %q", l, st.Status(l), w)
		}
	}
	if !slices.Equal(st.Mine, []string{c}) || st.HoldsTTL <= holdTTL-5*time.Second {
		t.Errorf("Mine = %v with %v left, want [%s] with about %v", st.Mine, st.HoldsTTL, c, holdTTL)
	}
	if got := statuses(1).Status(a); got != boxoffice.SeatFree {
		t.Errorf("account 1 sees the seat it released as %q, want free", got)
	}

	hook := &countHook{}
	env.R.Client.AddHook(hook)
	storetest.AtOnce(200, func(i int) { statuses(int64(100 + i)) })
	if s, p, big := hook.single.Load(), hook.pipelines.Load(), hook.big.Load(); s != 0 || p != 200 || big != 0 {
		t.Errorf("200 refreshes with a fresh shared read: %d commands, %d pipelines, %d reading the event; want 0, 200, 0", s, p, big)
	}

	clock.Add(1)
	hook.pipelines.Store(0)
	storetest.AtOnce(200, func(i int) { statuses(int64(100 + i)) })
	if p, big := hook.pipelines.Load(), hook.big.Load(); p != 200 || big != 1 {
		t.Errorf("200 refreshes with an old shared read: %d pipelines, %d reading the event; want 200, 1", p, big)
	}
	if st := statuses(2); st.Status(a) != boxoffice.SeatFree || st.Status(b) != boxoffice.SeatHeld {
		t.Errorf("after a new read: %q, %q; want free, held", st.Status(a), st.Status(b))
	}
}

// TestHolds_SeatStatuses_SharedAfterLoss checks that a shared read from
// before Redis lost its data is never used after it, however fresh: a seat
// sold after that read (and before the loss) shows sold as soon as the copy
// of the sold seats is rebuilt from PostgreSQL, whether SeatStatuses or a
// hold rebuilds it, and racing callers all see it.
func TestHolds_SeatStatuses_SharedAfterLoss(t *testing.T) {
	t.Parallel()
	for _, rebuilder := range []string{"SeatStatuses", "Hold"} {
		t.Run("RebuiltBy"+rebuilder, func(t *testing.T) {
			t.Parallel()
			env := newHoldsEnv(t)
			ev := newHoldEvent(t, env.DB, 40)
			ctx := context.Background()
			h, err := store.NewHolds(env.DB, env.R, nil)
			if err != nil {
				t.Fatal(err)
			}
			h.MapMaxAge = time.Hour // the shared read never grows old here
			statuses := func(acct int64) boxoffice.SeatMapState {
				st, err := h.SeatStatuses(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: acct})
				if err != nil {
					t.Errorf("SeatStatuses: %v", err)
				}
				return st
			}
			sold := ev.R[0]
			if st := statuses(2); st.Status(sold) != boxoffice.SeatFree {
				t.Fatalf("before the sale %s shows %q, want free", sold, st.Status(sold))
			}
			buyer := newHoldAccount(t, env.DB)
			total := sellSeats(t, env.DB, ev.ID, buyer, sold)
			if err := h.MarkSold(ctx, ev.ID, buyer, []string{sold}, total); err != nil {
				t.Fatal(err)
			}
			if st := statuses(2); st.Status(sold) != boxoffice.SeatFree {
				t.Fatalf("the shared read shows %s %q, want free still (it is an hour fresh)", sold, st.Status(sold))
			}
			forgetRedis(t, env.R)
			if rebuilder == "Hold" {
				_, err := h.Hold(ctx, boxoffice.HoldRequest{EventID: ev.ID, AccountID: 3, Limit: limit, TTL: holdTTL}, []string{sold})
				wantError(t, err, boxoffice.ESEATTAKEN)
			}
			var wrong atomic.Int64
			storetest.AtOnce(100, func(i int) {
				if statuses(int64(100+i)).Status(sold) != boxoffice.SeatSold {
					wrong.Add(1)
				}
			})
			if n := wrong.Load(); n != 0 {
				t.Errorf("after the loss %d of 100 racing callers see sold seat %s as not sold", n, sold)
			}
		})
	}
}

func TestHolds_MyHolds(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 20)
	if mine, ttl := env.myHolds(t, ev.ID, 1); mine == nil || len(mine) != 0 || ttl != 0 {
		t.Errorf("without holds: %#v, %v; want an empty list and 0", mine, ttl)
	}
	env.mustHold(t, ev.ID, 1, holdTTL, ev.S[3], ev.R[3])
	env.mustHold(t, ev.ID, 1, 20*time.Second, ev.R[4])
	env.mustHold(t, ev.ID, 2, holdTTL, ev.R[5])
	mine, ttl := env.myHolds(t, ev.ID, 1)
	if want := []string{ev.R[3], ev.R[4], ev.S[3]}; !slices.Equal(mine, want) {
		t.Errorf("MyHolds = %v, want %v", mine, want)
	}
	if ttl <= 15*time.Second || ttl > 20*time.Second {
		t.Errorf("TTL = %v, want the first hold's, at most 20s", ttl)
	}
}

func TestHolds_ExtendHolds(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 20)
	ctx := context.Background()
	env.mustHold(t, ev.ID, 1, 10*time.Second, ev.R[0], ev.R[1], ev.R[2])
	env.mustHold(t, ev.ID, 2, holdTTL, ev.S[0])
	if _, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}, ev.R[2]); err != nil {
		t.Fatal(err)
	}
	pttl := func(label string) time.Duration {
		d, err := env.R.Client.PTTL(ctx, env.R.Key("seat:lock:{%d}:%s", ev.ID, label)).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", label, err)
		}
		return d
	}
	otherBefore := pttl(ev.S[0])

	err := env.H.ExtendHolds(ctx, ev.ID, 1, "order-1", []string{ev.R[0], ev.R[1], ev.R[2], ev.S[0]}, 10*time.Minute)
	e := wantError(t, err, boxoffice.ESEATTAKEN)
	if got := e.Details["seats"].([]string); !slices.Equal(got, []string{ev.R[2], ev.S[0]}) {
		t.Errorf("Details[seats] = %v, want %v", got, []string{ev.R[2], ev.S[0]})
	}
	for _, l := range []string{ev.R[0], ev.R[1]} {
		if d := pttl(l); d <= 9*time.Minute {
			t.Errorf("PTTL of extended %s = %v, want about 10m", l, d)
		}
	}
	if mine, ttl := env.myHolds(t, ev.ID, 1); !slices.Equal(mine, []string{ev.R[0], ev.R[1]}) || ttl <= 9*time.Minute {
		t.Errorf("MyHolds = %v, %v; want %v with about 10m", mine, ttl, []string{ev.R[0], ev.R[1]})
	}
	if got := env.lock(t, ev.ID, ev.R[2]); got != "" {
		t.Errorf("released seat %s is held by %q after ExtendHolds", ev.R[2], got)
	}
	if got := env.lock(t, ev.ID, ev.S[0]); got != "2" || pttl(ev.S[0]) > otherBefore {
		t.Errorf("another account's seat: holder %q, PTTL %v; want 2, at most %v", got, pttl(ev.S[0]), otherBefore)
	}
	if st := env.statuses(t, ev.ID, 1); st.HoldsTTL <= 9*time.Minute {
		t.Errorf("HoldsTTL = %v after extension, want about 10m", st.HoldsTTL)
	}

	t.Run("NeverShortens", func(t *testing.T) {
		if err := env.H.ExtendHolds(ctx, ev.ID, 1, "order-1", []string{ev.R[0]}, time.Second); err != nil {
			t.Fatal(err)
		}
		if d := pttl(ev.R[0]); d <= 9*time.Minute {
			t.Errorf("PTTL = %v after a shorter extension, want about 10m", d)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		env.mustHold(t, ev.ID, 3, 2*time.Second, ev.S[5])
		storetest.AtOnce(200, func(i int) {
			acct := int64(3)
			if i%2 == 1 {
				acct = int64(100 + i)
			}
			err := env.H.ExtendHolds(ctx, ev.ID, acct, "order-3", []string{ev.S[5]}, time.Minute)
			if acct == 3 && err != nil {
				t.Errorf("holder extending: %v", err)
			} else if acct != 3 {
				wantError(t, err, boxoffice.ESEATTAKEN)
			}
		})
		if got := env.lock(t, ev.ID, ev.S[5]); got != "3" || pttl(ev.S[5]) <= 50*time.Second {
			t.Errorf("holder %q, PTTL %v; want 3, about 1m", got, pttl(ev.S[5]))
		}
	})
}

func TestHolds_MarkSold(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 20)
	ctx := context.Background()
	env.mustHold(t, ev.ID, 1, holdTTL, ev.R[0], ev.S[0], ev.R[1])
	env.mustHold(t, ev.ID, 2, holdTTL, ev.S[1])

	// Account 1 bought R0 and S0, and a lingering hold of account 2 on S1
	// (possible only in a late-payment race) ends as well.
	sold := []string{ev.R[0], ev.S[0], ev.S[1]}
	for range 2 { // repeats change nothing
		if err := env.H.MarkSold(ctx, ev.ID, 1, sold, 3); err != nil {
			t.Fatalf("MarkSold: %v", err)
		}
	}
	for _, l := range sold {
		if got := env.lock(t, ev.ID, l); got != "" {
			t.Errorf("sold seat %s still held by %q", l, got)
		}
	}
	st := env.statuses(t, ev.ID, 1)
	for _, l := range sold {
		if st.Status(l) != boxoffice.SeatSold {
			t.Errorf("Status(%s) = %q, want sold", l, st.Status(l))
		}
	}
	if st.Owned != 3 || !slices.Equal(st.Mine, []string{ev.R[1]}) || st.Left(limit) != 1 {
		t.Errorf("owned %d, mine %v, left %d; want 3, [%s], 1", st.Owned, st.Mine, st.Left(limit), ev.R[1])
	}
	if n, _ := env.R.Client.ZCard(ctx, env.R.Key("held:{%d}", ev.ID)).Result(); n != 1 {
		t.Errorf("held index has %d seats, want 1", n)
	}
	if n, _ := env.R.Client.HLen(ctx, env.R.Key("holder:{%d}", ev.ID)).Result(); n != 1 {
		t.Errorf("holder index has %d seats, want 1", n)
	}
	// Account 2's count drops the sold seat: it may hold 5 more.
	env.mustHold(t, ev.ID, 2, holdTTL, ev.R[2], ev.R[3], ev.R[4], ev.R[5], ev.R[6])
	if mine, _ := env.myHolds(t, ev.ID, 2); len(mine) != 5 || slices.Contains(mine, ev.S[1]) {
		t.Errorf("account 2's MyHolds = %v after its seat was sold, want 5 seats without %s", mine, ev.S[1])
	}

	if err := env.H.MarkSold(ctx, ev.ID, 1, nil, 2); err != nil {
		t.Fatal(err)
	}
	if got := env.statuses(t, ev.ID, 1).Owned; got != 3 {
		t.Errorf("owned %d after an older total, want 3 (bought only grows)", got)
	}
	env.mustHold(t, ev.ID, 1, holdTTL, ev.S[2])
	_, err := env.hold(ev.ID, 1, holdTTL, ev.S[3])
	wantError(t, err, boxoffice.ELIMITEXCEEDED)
	_, err = env.hold(ev.ID, 3, holdTTL, ev.R[0])
	wantError(t, err, boxoffice.ESEATTAKEN)
}

// BenchmarkHolds_Hold holds fresh seats by hand, 1 or 3 a hold, each hold
// by an account with none, and reports the commands Redis ran per hold
// (cmds/op, the script's included; exact on a Redis of the benchmark's own).
func BenchmarkHolds_Hold(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("seats=%d", n), func(b *testing.B) {
			env := newHoldsEnv(b)
			ev := newHoldEvent(b, env.DB, 15000)
			ctx := context.Background()
			env.mustHold(b, ev.ID, 1, holdTTL, ev.Labels[0]) // loads the caches
			next := 1
			cmds := newCommandCounter(b, env.R)
			cmds.start()
			b.ResetTimer()
			for i := range b.N {
				if next+n > len(ev.Labels) {
					b.StopTimer()
					cmds.stop()
					forgetRedis(b, env.R)
					env.mustHold(b, ev.ID, 1, holdTTL, ev.Labels[0])
					next = 1
					cmds.start()
					b.StartTimer()
				}
				req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: int64(i + 2), Limit: limit, TTL: holdTTL}
				if _, err := env.H.Hold(ctx, req, ev.Labels[next:next+n]); err != nil {
					b.Fatal(err)
				}
				next += n
			}
			b.StopTimer()
			cmds.stop()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			cmds.report(b, "evalsha", "sismember", "get", "set")
		})
	}
}

// BenchmarkHolds_HoldConcurrent holds fresh seats by hand, one a hold by an
// account with none, from 16 goroutines at once as a server's requests do,
// with the hold scripts sent on the client (client) or on its automatic
// pipelining (pipe: Holds.Pipe, as the binary sets it), and reports the
// commands and Redis's CPU time per hold (exact on a Redis of the
// benchmark's own). At most 14,999 holds a run (-benchtime).
func BenchmarkHolds_HoldConcurrent(b *testing.B) {
	for _, piped := range []bool{false, true} {
		name := map[bool]string{false: "client", true: "pipe"}[piped]
		b.Run(name, func(b *testing.B) {
			env := newHoldsEnv(b)
			if piped {
				pipe, err := env.R.AutoPipeline()
				if err != nil {
					b.Fatal(err)
				}
				env.H.Pipe = pipe
			}
			ev := newHoldEvent(b, env.DB, 15000)
			if b.N >= len(ev.Labels) {
				b.Fatalf("%d holds: the event has %d seats", b.N, len(ev.Labels))
			}
			ctx := context.Background()
			env.mustHold(b, ev.ID, 1, holdTTL, ev.Labels[0]) // loads the caches
			var next atomic.Int64
			cmds := newCommandCounter(b, env.R)
			cmds.start()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: i + 1, Limit: limit, TTL: holdTTL}
					if _, err := env.H.Hold(ctx, req, ev.Labels[i:i+1]); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			cmds.stop()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			cmds.report(b, "evalsha")
		})
	}
}

// BenchmarkHolds_SeatStatuses refreshes a 15,000-seat map with 6,000 seats
// held and 3,000 sold, reading the event's part on every call (Fresh) or
// sharing one read a second (Shared, the default).
func BenchmarkHolds_SeatStatuses(b *testing.B) {
	env := newHoldsEnv(b)
	ev := newHoldEvent(b, env.DB, 15000)
	ctx := context.Background()
	for i := 0; i < 6000; i += 4 { // 6,000 seats held by 1,500 accounts
		env.mustHold(b, ev.ID, int64(10+i), holdTTL, ev.Labels[i:i+4]...)
	}
	if err := env.H.MarkSold(ctx, ev.ID, 2, ev.Labels[6000:9000], 3000); err != nil {
		b.Fatal(err)
	}
	env.mustHold(b, ev.ID, 1, holdTTL, ev.Labels[9000:9002]...)
	for _, age := range []struct {
		name string
		age  time.Duration
	}{{"Fresh", 0}, {"Shared", store.DefaultMapMaxAge}} {
		b.Run(age.name, func(b *testing.B) {
			h := env.instance(b, nil)
			h.MapMaxAge = age.age
			for range b.N {
				if _, err := h.SeatStatuses(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// Rule 5 in the hold scripts: with a session key, Hold, Release and
// SeatStatuses act only for an account whose live entry token is bound to
// that session, checked in the same step as the action, and refuse with
// the reason otherwise (never admitted, another session, expired), changing
// nothing; racing rejoins that move the turn leave exactly one session able
// to hold.
func TestHolds_EntryChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 20)
	q := &store.Queue{Redis: env.R}
	acct := newHoldAccount(t, env.DB)
	stranger := newHoldAccount(t, env.DB)
	if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: ev.ID, AccountID: acct, SessionKey: "sid-mine"}); err != nil {
		t.Fatal(err)
	}
	as := func(a int64, sid string) boxoffice.Shopper {
		return boxoffice.Shopper{EventID: ev.ID, AccountID: a, SessionKey: sid}
	}
	hold := func(sh boxoffice.Shopper, ttl time.Duration, labels ...string) error {
		_, err := env.H.Hold(ctx, boxoffice.HoldRequest{EventID: sh.EventID, AccountID: sh.AccountID, SessionKey: sh.SessionKey, Limit: limit, TTL: ttl}, labels)
		return err
	}
	refused := func(t *testing.T, sh boxoffice.Shopper, reason string) {
		t.Helper()
		wantCodeReason(t, hold(sh, holdTTL, ev.R[1]), boxoffice.ENOENTRYTOKEN, reason)
		mine, _ := env.myHolds(t, ev.ID, sh.AccountID)
		_, err := env.H.HoldBest(ctx, boxoffice.HoldRequest{EventID: sh.EventID, AccountID: sh.AccountID, SessionKey: sh.SessionKey, Limit: limit, TTL: holdTTL}, "R", 2)
		wantCodeReason(t, err, boxoffice.ENOENTRYTOKEN, reason)
		if after, _ := env.myHolds(t, ev.ID, sh.AccountID); !slices.Equal(after, mine) {
			t.Errorf("a refused best-available hold changed the holds from %v to %v", mine, after)
		}
		_, err = env.H.Release(ctx, sh, ev.R[0])
		wantCodeReason(t, err, boxoffice.ENOENTRYTOKEN, reason)
		_, err = env.H.SeatStatuses(ctx, sh)
		wantCodeReason(t, err, boxoffice.ENOENTRYTOKEN, reason)
	}

	t.Run("ErrNotAdmittedYet", func(t *testing.T) { refused(t, as(acct, "sid-mine"), boxoffice.ReasonNone) })
	admit := boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 10, TokenTTL: time.Hour}
	if _, err := q.Admit(ctx, admit, 1, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := hold(as(acct, "sid-mine"), holdTTL, ev.R[0]); err != nil {
		t.Fatalf("hold with the entry: %v", err)
	}
	before := env.lock(t, ev.ID, ev.R[1])
	t.Run("ErrOtherSession", func(t *testing.T) { refused(t, as(acct, "sid-copied"), boxoffice.ReasonOtherSession) })
	t.Run("ErrOtherAccount", func(t *testing.T) { refused(t, as(stranger, "sid-mine"), boxoffice.ReasonNone) })
	if got := env.lock(t, ev.ID, ev.R[1]); got != before {
		t.Fatalf("a refused hold changed seat %s's lock from %q to %q", ev.R[1], before, got)
	}
	t.Run("OK", func(t *testing.T) {
		st, err := env.H.SeatStatuses(ctx, as(acct, "sid-mine"))
		if err != nil || !slices.Equal(st.Mine, []string{ev.R[0]}) {
			t.Fatalf("SeatStatuses with the entry = %+v, %v; want %s mine", st, err, ev.R[0])
		}
		mine, err := env.H.Release(ctx, as(acct, "sid-mine"), ev.R[0])
		if err != nil || len(mine.Mine) != 0 {
			t.Fatalf("Release with the entry = %+v, %v; want no holds left", mine, err)
		}
	})

	// Many sessions rejoin at once while admitted: the turn moves to one of
	// them, and only that one holds.
	sessions := make([]string, 50)
	var wg sync.WaitGroup
	for i := range sessions {
		sessions[i] = fmt.Sprintf("device-%d", i)
		wg.Go(func() {
			if p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: ev.ID, AccountID: acct, SessionKey: sessions[i]}); err != nil || p.Status != boxoffice.QueueAdmitted {
				t.Errorf("rejoin from %s = %+v, %v", sessions[i], p, err)
			}
		})
	}
	wg.Wait()
	var held atomic.Int64
	storetest.AtOnce(len(sessions), func(i int) {
		switch err := hold(as(acct, sessions[i]), holdTTL, ev.S[i%3]); boxoffice.NoEntryReason(err) {
		case "":
			if err != nil {
				t.Errorf("hold from %s: %v", sessions[i], err)
				return
			}
			held.Add(1)
		case boxoffice.ReasonOtherSession:
		default:
			t.Errorf("hold from %s: %v, want held or refused for another session", sessions[i], err)
		}
	})
	if held.Load() == 0 {
		t.Fatal("no session holds the turn after the rejoins")
	}
	owners := 0
	for _, sid := range append(sessions, "sid-mine") {
		if _, err := env.H.SeatStatuses(ctx, as(acct, sid)); err == nil {
			owners++
		}
	}
	if owners != 1 {
		t.Fatalf("%d sessions pass the entry check after the rejoins, want 1", owners)
	}

	t.Run("ErrExpired", func(t *testing.T) {
		short := boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 10, TokenTTL: time.Millisecond}
		other := newHoldAccount(t, env.DB)
		if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: ev.ID, AccountID: other, SessionKey: "sid-other"}); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Admit(ctx, short, 2, time.Second); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); boxoffice.NoEntryReason(hold(as(other, "sid-other"), holdTTL, ev.R[5])) != boxoffice.ReasonExpired; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("a 1 ms entry token still holds seats after 10 s")
			}
		}
		refused(t, as(other, "sid-other"), boxoffice.ReasonExpired)
	})
}
