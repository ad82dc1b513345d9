package store_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// holdSpan is one grant of a seat to an account, on Redis's clock (ms):
// from its grant until it ended, at its expiry or, earlier, at a release.
type holdSpan struct {
	acct       int64
	from, till int64 // till is exclusive: the hold was live at till-1
}

// spanLedger records every grant and release of a test as spans per seat.
type spanLedger struct {
	mu    sync.Mutex
	spans map[string][]*holdSpan
	live  map[string]*holdSpan // the last span of each seat, by "acct label"
}

func newSpanLedger() *spanLedger {
	return &spanLedger{spans: map[string][]*holdSpan{}, live: map[string]*holdSpan{}}
}

// grant records labels held by acct from now until exp (ms, both Redis's;
// a hold is live at its expiry). A label acct holds already at now (a hold
// asked again, which keeps its expiry: exp is then the earliest expiry of
// the seats asked) goes on with its span, which a release then ends: a
// second span would outlive the release.
func (l *spanLedger) grant(acct int64, labels []string, now, exp time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	from, till := now.UnixMilli(), exp.UnixMilli()+1
	for _, s := range labels {
		key := strconv.FormatInt(acct, 10) + " " + s
		if sp := l.live[key]; sp != nil && sp.till > from {
			sp.till = max(sp.till, till)
			continue
		}
		sp := &holdSpan{acct: acct, from: from, till: till}
		l.spans[s] = append(l.spans[s], sp)
		l.live[key] = sp
	}
}

// end records that acct's hold on label ended at the latest at ms (Redis's).
func (l *spanLedger) end(acct int64, label string, ms int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sp := l.live[strconv.FormatInt(acct, 10)+" "+label]; sp != nil && ms < sp.till {
		sp.till = ms
	}
}

// overlaps returns the seats that two accounts held at one time.
func (l *spanLedger) overlaps() []string {
	var out []string
	for s, spans := range l.spans {
		for i, a := range spans {
			for _, b := range spans[i+1:] {
				if a.acct != b.acct && max(a.from, b.from) < min(a.till, b.till) {
					out = append(out, s+": "+strconv.FormatInt(a.acct, 10)+" and "+strconv.FormatInt(b.acct, 10))
				}
			}
		}
	}
	return out
}

// redisMillis is Redis's clock in ms.
func redisMillis(tb testing.TB, r *store.Redis) int64 {
	tb.Helper()
	t, err := r.Client.Time(context.Background()).Result()
	if err != nil {
		tb.Fatalf("TIME: %v", err)
	}
	return t.UnixMilli()
}

// Best available's index follows holds (best:{e}:<grade>:<q> and its
// parked runs, best:{e}:<grade>:<q>:held): hundreds of fans at once hold
// by hand and through best available, half of them for 20 to 300 ms and
// half for longer than the round, and release their holds, leave the sale
// with them, or keep them (to expire), round after round. Then: no seat was held by two accounts at one
// time (on Redis's clock), no account held more than the limit, no blocked
// seat was held; the index lists, or has due, every run of the grade that
// has q free seats side by side; and once the short holds have ended, the grade
// sells out through best available alone: every seat neither sold nor
// blocked ends up held, so no seat freed by a release or an expiry was
// left parked.
func TestHolds_HoldBest_IndexFollowsHolds(t *testing.T) {
	t.Parallel()
	rounds, fans := 4, 240
	if storetest.ChaosLong() {
		rounds, fans = 10, 480
	}
	for round := range rounds {
		env := newBlocksEnv(t, 800) // R: 400 seats in 8 rows
		ev, ctx := env.Event, context.Background()
		// Every tenth seat sold, and six blocked: runs of nine free seats.
		var sold []string
		for k := 9; k < len(ev.R); k += 10 {
			sold = append(sold, ev.R[k])
		}
		sellSeats(t, env.DB, ev.ID, newHoldAccount(t, env.DB), sold...)
		blocked := []string{ev.R[3], ev.R[55], ev.R[56], ev.R[120], ev.R[201], ev.R[333]}
		env.mustChange(t, boxoffice.BlockActionBlock, blocked...)
		gone := map[string]bool{}
		for _, s := range append(sold, blocked...) {
			gone[s] = true
		}
		if _, err := env.H.SeatStatuses(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}); err != nil {
			t.Fatalf("load the sold seats: %v", err)
		}

		led := newSpanLedger()
		base := int64(round*10*fans + 1)
		granted := func(acct int64, res boxoffice.HoldResult) {
			for _, s := range res.Held {
				if gone[s] {
					t.Errorf("round %d: %s granted to %d while sold or blocked", round, s, acct)
				}
			}
			if n := len(res.Mine.Mine) + res.Mine.Owned; n > limit {
				t.Errorf("round %d: account %d holds %d seats, limit %d", round, acct, n, limit)
			}
			led.grant(acct, res.Held, res.Mine.Now, res.ExpiresAt)
		}
		release := func(acct int64, labels []string) {
			for _, s := range labels {
				mine, err := env.H.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: acct}, s)
				switch boxoffice.ErrorCode(err) {
				case "":
					led.end(acct, s, mine.Now.UnixMilli())
				case boxoffice.ENOTFOUND: // it expired first
				default:
					t.Errorf("round %d: account %d releases %s: %v", round, acct, s, err)
				}
			}
		}
		storetest.AtOnce(fans, func(i int) {
			acct := base + int64(i)
			for range 6 {
				ttl := time.Duration(20+rand.IntN(280)) * time.Millisecond
				if i%2 == 1 {
					ttl = holdTTL // outlives the round unless released
				}
				req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: acct, Limit: limit, TTL: ttl}
				var res boxoffice.HoldResult
				var err error
				if i%4 == 0 {
					k := rand.IntN(len(ev.R) - 1)
					res, err = env.H.Hold(ctx, req, ev.R[k:k+1+rand.IntN(2)])
				} else {
					q := 1 + rand.IntN(4)
					res, err = env.H.HoldBest(ctx, req, "R", q)
					if err == nil && (len(res.Held) != q || !together(res.Held)) {
						t.Errorf("round %d: account %d asked %d together, got %v", round, acct, q, res.Held)
					}
				}
				switch boxoffice.ErrorCode(err) {
				case "":
					granted(acct, res)
				case boxoffice.ESEATTAKEN, boxoffice.ELIMITEXCEEDED, boxoffice.EBADCHOICE, boxoffice.ENOTTOGETHER:
					continue
				default:
					t.Errorf("round %d: account %d holds: %v", round, acct, err)
					return
				}
				switch rand.IntN(4) {
				case 0: // released one by one
					release(acct, res.Held)
				case 1: // the fan leaves the sale with all its holds
					before := redisMillis(t, env.R)
					if err := env.H.Leave(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: acct}); err != nil {
						t.Errorf("round %d: account %d leaves: %v", round, acct, err)
					}
					for _, s := range res.Mine.Mine {
						led.end(acct, s, before)
					}
				default: // left to expire
				}
			}
		})
		if t.Failed() {
			return
		}
		checkBestIndex(t, env.holdsEnv, ev.ID, gone)

		// The short holds end; the rest of the grade sells out through best
		// available alone.
		time.Sleep(350 * time.Millisecond)
		env.sellOutThroughBest(t, ev.ID, fans, base+int64(2*fans), func(acct int64, held []string) {
			now := redisMillis(t, env.R)
			led.grant(acct, held, time.UnixMilli(now), time.UnixMilli(now).Add(holdTTL))
		})
		if o := led.overlaps(); len(o) > 0 {
			t.Fatalf("round %d: seats held by two accounts at once: %v", round, o)
		}
		var missed []string
		for _, s := range ev.R {
			if !gone[s] && env.lock(t, ev.ID, s) == "" {
				missed = append(missed, s)
			}
		}
		if len(missed) > 0 {
			t.Fatalf("round %d: %d free seats never offered by best available: %v", round, len(missed), missed)
		}
	}
}

// checkBestIndex checks best available's index of grade R against Redis's
// seats: for each quantity, every run with that many free seats side by
// side (neither sold, blocked nor held) is listed, or parked with a time
// that has come (the next pick puts it back first).
func checkBestIndex(t *testing.T, env holdsEnv, eventID int64, gone map[string]bool) {
	t.Helper()
	ctx := context.Background()
	runs, err := store.BestRuns(ctx, env.H, eventID, "R")
	if err != nil {
		t.Fatalf("runs of R: %v", err)
	}
	held := map[string]bool{}
	for _, run := range runs {
		for _, s := range run {
			n, err := env.R.Client.Exists(ctx, env.R.Key("seat:lock:{%d}:%s", eventID, s)).Result()
			if err != nil {
				t.Fatalf("EXISTS lock %s: %v", s, err)
			}
			held[s] = n == 1
		}
	}
	// After the reads: a hold that ended while they ran may have left a
	// run free, and then its time has come.
	now := redisMillis(t, env.R)
	for q := 1; q <= limit; q++ {
		indexKey, parkedKey := store.BestIndexKeys(env.H, eventID, "R", q)
		labels, err := env.R.Client.ZRange(ctx, indexKey, 0, -1).Result()
		if err != nil {
			t.Fatalf("ZRANGE %s: %v", indexKey, err)
		}
		listed := map[string]bool{}
		for _, l := range labels {
			listed[l] = true
		}
		if !listed[""] {
			t.Fatalf("index of %d seats not built", q)
		}
		zs, err := env.R.Client.ZRangeWithScores(ctx, parkedKey, 0, -1).Result()
		if err != nil {
			t.Fatalf("ZRANGE %s: %v", parkedKey, err)
		}
		parked := map[string]int64{}
		for _, z := range zs {
			if m := z.Member.(string); m != "" {
				_, label, _ := strings.Cut(m, " ")
				parked[label] = int64(z.Score)
			}
		}
		for _, run := range runs {
			stretch, longest := 0, 0
			for _, s := range run {
				if held[s] || gone[s] {
					stretch = 0
				} else {
					stretch++
					longest = max(longest, stretch)
				}
			}
			at, isParked := parked[run[0]]
			if longest >= q && !listed[run[0]] && !(isParked && at <= now) {
				t.Errorf("%d seats: run %s has %d free seats together, neither listed nor due (parked: %v, until %d, now %d)",
					q, run[0], longest, isParked, at, now)
			}
		}
	}
}
