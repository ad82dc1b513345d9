package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

// TestChaos_HoldsPostgresDown stops a private PostgreSQL after the sold-seat
// cache was loaded, and each round, while it is down:
//
//   - the cache's freshness marker expires (the test deletes it, as its
//     expiry would), so every hold and seat map tries to load the cache,
//     fails, and must use the copy in Redis: two instances' goroutines race
//     for the round's free seats, a few fans per seat, with the buyer who
//     owns all but one ticket of the limit racing for every one, and others
//     for the sold seats (alone and with a free seat), while seat maps are
//     read. Exactly one fan wins each free seat, and holds it; no sold seat
//     is held; the buyer holds at most one seat; seat maps show the sold
//     seats and the buyer's bought count. A seat sold and marked sold after
//     the load counts as sold. The failed loads leave no key behind;
//   - then Redis loses its data (the test's keys are deleted, as FLUSHALL
//     would), and a lagging MarkSold writes a part of a copy: racing holds
//     and seat maps must all answer "unavailable", never a hold, as a copy
//     that Redis lost cannot tell which seats are sold;
//
// and when PostgreSQL is back, the cache is loaded again: sold seats are
// refused, the limit counts what was bought, and holds are granted.
// BOXOFFICE_CHAOS=long runs more seats, fans and rounds.
func TestChaos_HoldsPostgresDown(t *testing.T) {
	t.Parallel()
	rounds, nFree, fans := 1, 10, 8
	if storetest.ChaosLong() {
		rounds, nFree, fans = 6, 25, 40
	}
	ctx := context.Background()
	pg := storetest.StartPostgres(t)
	db := pg.MustOpenDB()
	env := holdsEnv{DB: db, R: storetest.MustOpenRedis(t), Reg: prometheus.NewRegistry()}
	env.H = env.instance(t, env.Reg)
	instances := []*store.Holds{env.H, env.instance(t, nil)}

	const bought = limit - 1
	ev := newHoldEvent(t, db, bought+rounds*(1+nFree))
	buyer, late := newHoldAccount(t, db), newHoldAccount(t, db)
	sold := slices.Clone(ev.Labels[:bought])
	sellSeats(t, db, ev.ID, buyer, sold...)
	ready, complete := env.R.Key("cache:ready:{%d}", ev.ID), env.R.Key("cache:complete:{%d}", ev.ID)

	for r := range rounds {
		seats := ev.Labels[bought+r*(1+nFree):]
		lateSeat, free := seats[0], seats[1:1+nFree]
		// PostgreSQL is up: every instance loads the cache (again) and learns
		// the event's seats; then a sale commits and is marked sold.
		for _, h := range instances {
			req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: 1, Limit: limit, TTL: holdTTL}
			_, err := h.Hold(ctx, req, sold[:1])
			wantError(t, err, boxoffice.ESEATTAKEN)
		}
		if ttl := env.R.Client.PTTL(ctx, ready).Val(); ttl <= 0 || ttl > store.DefaultSoldCacheTTL {
			t.Fatalf("round %d: cache:ready PTTL %v, want up to %v", r, ttl, store.DefaultSoldCacheTTL)
		}
		if ttl := env.R.Client.PTTL(ctx, complete).Val(); ttl != -1 {
			t.Fatalf("round %d: cache:complete PTTL %v, want none (-1ns)", r, ttl)
		}
		total := sellSeats(t, db, ev.ID, late, lateSeat)
		if err := env.H.MarkSold(ctx, ev.ID, late, []string{lateSeat}, total); err != nil {
			t.Fatal(err)
		}
		sold = append(sold, lateSeat)

		pg.Stop()
		if err := env.R.Client.Del(ctx, ready).Err(); err != nil {
			t.Fatal(err)
		}
		raceStale(t, env, instances, ev.ID, r, buyer, sold, free, fans)
		if n := env.R.Client.Exists(ctx, ready).Val(); n != 0 {
			t.Errorf("round %d: the cache was marked fresh while PostgreSQL was down", r)
		}
		if keys, _ := storetest.Keys(ctx, env.R, env.R.Key("cache:loading:*")); len(keys) != 0 {
			t.Errorf("round %d: %d keys of failed loads left in Redis", r, len(keys))
		}

		// Redis loses its data, and then the late sale's MarkSold is done
		// again, as a confirmation's that lagged would: Redis has a part of
		// the copy, and no sign that it is whole.
		forgetRedis(t, env.R)
		if err := env.H.MarkSold(ctx, ev.ID, late, []string{lateSeat}, total); err != nil {
			t.Fatal(err)
		}
		all := append(slices.Clone(sold), free...)
		var granted, other sync.Map
		storetest.AtOnce(len(all)+20, func(i int) {
			h := instances[i%len(instances)]
			if i >= len(all) {
				if _, err := h.SeatStatuses(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: buyer}); !store.Unreachable(err) {
					other.Store(i, err)
				}
				return
			}
			req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: int64(1 + i), Limit: limit, TTL: holdTTL}
			seat := all[i]
			if _, err := h.Hold(ctx, req, []string{seat}); err == nil {
				granted.Store(seat, true)
			} else if !store.Unreachable(err) {
				other.Store(i, err)
			}
		})
		granted.Range(func(seat, _ any) bool {
			t.Errorf("round %d: %s held after Redis lost its data while PostgreSQL was down", r, seat)
			return true
		})
		other.Range(func(i, err any) bool {
			t.Errorf("round %d: after Redis lost its data, call %d: %v, want unavailable", r, i, err)
			return true
		})
		if n := env.R.Client.Exists(ctx, ready, complete).Val(); n != 0 {
			t.Errorf("round %d: %d cache markers set while PostgreSQL was down", r, n)
		}

		pg.Start()
		_, err := env.hold(ev.ID, 1, holdTTL, sold[len(sold)-1])
		wantError(t, err, boxoffice.ESEATTAKEN)
		st := env.statuses(t, ev.ID, buyer)
		for _, l := range sold {
			if st.Status(l) != boxoffice.SeatSold {
				t.Errorf("round %d: after PostgreSQL came back, sold seat %s shows %q", r, l, st.Status(l))
			}
		}
		if st.Owned != bought || len(st.Statuses) != len(sold) {
			t.Errorf("round %d: after PostgreSQL came back: owned %d, %d seats not free; want %d, %d", r, st.Owned, len(st.Statuses), bought, len(sold))
		}
		_, err = env.hold(ev.ID, buyer, holdTTL, free[0], free[1])
		wantError(t, err, boxoffice.ELIMITEXCEEDED)
		env.mustHold(t, ev.ID, buyer, holdTTL, free[0])
		if _, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: buyer}, free[0]); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			return
		}
	}
}

// raceStale races holds and seat maps on instances while PostgreSQL is down
// and the cache's freshness marker is gone (TestChaos_HoldsPostgresDown):
// fans fans per free seat (each fan tries at most limit seats, so only a
// rival can refuse it), the buyer (limit-1 bought) for every free seat, a
// fan for each sold seat alone and with a free one, and seat maps of the
// buyer. It checks what each got and what Redis holds after.
func raceStale(t *testing.T, env holdsEnv, instances []*store.Holds, eventID int64, round int, buyer int64, sold, free []string, fans int) {
	t.Helper()
	ctx := context.Background()
	type try struct {
		acct  int64
		seats []string
	}
	var tries []try
	for s, seat := range free {
		for k := range fans {
			tries = append(tries, try{int64(1 + round*100000 + k*100 + s/limit), []string{seat}})
		}
		tries = append(tries, try{buyer, []string{seat}})
	}
	for i, seat := range sold {
		acct := int64(1 + round*100000 + 90000 + i)
		tries = append(tries, try{acct, []string{seat}}, try{acct + 1000, []string{free[i%len(free)], seat}})
	}
	maps := 2 * len(instances)

	var mu sync.Mutex
	winners := map[string][]int64{}
	storetest.AtOnce(len(tries)+maps, func(i int) {
		h := instances[i%len(instances)]
		if i >= len(tries) {
			st, err := h.SeatStatuses(ctx, boxoffice.Shopper{EventID: eventID, AccountID: buyer})
			if err != nil {
				t.Errorf("round %d: seat map while PostgreSQL is down: %v", round, err)
				return
			}
			for _, l := range sold {
				if st.Status(l) != boxoffice.SeatSold {
					t.Errorf("round %d: seat map while PostgreSQL is down shows sold seat %s %q", round, l, st.Status(l))
				}
			}
			if st.Owned != limit-1 {
				t.Errorf("round %d: seat map while PostgreSQL is down: owned %d, want %d", round, st.Owned, limit-1)
			}
			return
		}
		tr := tries[i]
		req := boxoffice.HoldRequest{EventID: eventID, AccountID: tr.acct, Limit: limit, TTL: holdTTL}
		_, err := h.Hold(ctx, req, tr.seats)
		switch code := boxoffice.ErrorCode(err); {
		case err == nil:
			mu.Lock()
			for _, l := range tr.seats {
				winners[l] = append(winners[l], tr.acct)
			}
			mu.Unlock()
		case code == boxoffice.ESEATTAKEN, code == boxoffice.ELIMITEXCEEDED && tr.acct == buyer:
		default:
			t.Errorf("round %d: account %d holds %v while PostgreSQL is down: %v, want held, seat_taken or (the buyer) limit_exceeded", round, tr.acct, tr.seats, err)
		}
	})

	for _, l := range sold {
		if w, lock := winners[l], env.lock(t, eventID, l); len(w) != 0 || lock != "" {
			t.Errorf("round %d: sold seat %s granted to %v, lock %q; want none", round, l, w, lock)
		}
	}
	for _, l := range free {
		w := winners[l]
		if len(w) != 1 {
			t.Errorf("round %d: seat %s granted to %v, want exactly one fan", round, l, w)
		} else if lock := env.lock(t, eventID, l); lock != acctID(w[0]) {
			t.Errorf("round %d: seat %s granted to %d, lock %q", round, l, w[0], lock)
		}
	}
	if mine, _ := env.myHolds(t, eventID, buyer); len(mine) > limit-(limit-1) {
		t.Errorf("round %d: the buyer of %d tickets holds %v, over the limit of %d", round, limit-1, mine, limit)
	}
}
