package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
)

// blocksEnv is a holdsEnv with a Blocks and an admin account.
type blocksEnv struct {
	holdsEnv
	B     *store.Blocks
	Admin int64
	Event fixtureEvent
}

func newBlocksEnv(tb testing.TB, seats int) blocksEnv {
	tb.Helper()
	env := blocksEnv{holdsEnv: newHoldsEnv(tb)}
	env.B = &store.Blocks{DB: env.DB, Holds: env.H}
	env.Admin = newHoldAccount(tb, env.DB)
	env.Event = newHoldEvent(tb, env.DB, seats)
	return env
}

func (env blocksEnv) change(action string, seats ...string) (*boxoffice.BlockResult, error) {
	return env.B.ChangeBlocks(context.Background(), boxoffice.BlockRequest{
		EventID: env.Event.ID, AdminID: env.Admin, Action: action, Seats: seats,
	})
}

func (env blocksEnv) mustChange(tb testing.TB, action string, seats ...string) *boxoffice.BlockResult {
	tb.Helper()
	res, err := env.change(action, seats...)
	if err != nil {
		tb.Fatalf("%s %v: %v", action, seats, err)
	}
	return res
}

// blockedRows returns the event's blocked_seat labels, sorted.
func (env blocksEnv) blockedRows(tb testing.TB) []string {
	tb.Helper()
	got, err := env.B.BlockedSeats(context.Background(), env.Event.ID)
	if err != nil {
		tb.Fatalf("BlockedSeats: %v", err)
	}
	return got
}

// audits returns the event's audit log entries as "action seats".
func (env blocksEnv) audits(tb testing.TB) []string {
	tb.Helper()
	rows, err := env.DB.Pool.Query(context.Background(), `
		SELECT action || ' ' || array_to_string(seats, ',') FROM audit_log
		WHERE event_id = $1 AND admin_id = $2 ORDER BY id`, env.Event.ID, env.Admin)
	if err != nil {
		tb.Fatalf("audit log: %v", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatalf("audit log: %v", err)
	}
	return out
}

// pendingOrder records with raw SQL an unpaid order of the account for
// labels, with no hold in Redis (as one whose holds ended before its expiry
// ran).
func pendingOrder(tb testing.TB, db *store.DB, eventID, accountID int64, labels ...string) {
	tb.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		id := holdHex(12)
		_, err := tx.Exec(ctx, `
			INSERT INTO orders (id, event_id, account_id, amount, currency, order_name, expires_at)
			VALUES ($1, $2, $3, $4, 'KRW', 'Test Night', now() + interval '10 minutes')`, id, eventID, accountID, 150000*len(labels))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO order_item (order_id, event_id, seat_label, grade, price)
			SELECT $1, $2, l, 'R', 150000 FROM unnest($3::text[]) l`, id, eventID, labels)
		return err
	})
	if err != nil {
		tb.Fatalf("pending order of %v: %v", labels, err)
	}
}

func TestBlocks_ChangeBlocks(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		env := newBlocksEnv(t, 100)
		ctx := context.Background()
		a, b, c := env.Event.R[0], env.Event.R[1], env.Event.R[2]
		res := env.mustChange(t, boxoffice.BlockActionBlock, b, a)
		want := &boxoffice.BlockResult{EventID: env.Event.ID, Action: "block", Seats: []string{a, b}, Blocked: []string{a, b}, Changed: true}
		if fmt.Sprint(res) != fmt.Sprint(want) {
			t.Fatalf("block: got %+v, want %+v", res, want)
		}
		fan := newHoldAccount(t, env.DB)
		if _, err := env.hold(env.Event.ID, fan, holdTTL, a, c); boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
			t.Fatalf("hold of a blocked seat: got %v, want %s", err, boxoffice.ESEATTAKEN)
		} else if seats := err.(*boxoffice.Error).Details["seats"]; fmt.Sprint(seats) != fmt.Sprint([]string{a}) {
			t.Errorf("hold of a blocked seat: taken %v, want [%s]", seats, a)
		}
		// Best available passes the blocked seats by: R's first row begins with a, b.
		best, err := env.H.HoldBest(ctx, boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: fan, Limit: limit, TTL: holdTTL}, "R", 2)
		if err != nil {
			t.Fatalf("best available: %v", err)
		}
		for _, l := range best.Held {
			if l == a || l == b {
				t.Errorf("best available held blocked seat %s (held %v)", l, best.Held)
			}
		}
		st, err := env.H.SeatStatuses(ctx, boxoffice.Shopper{EventID: env.Event.ID, AccountID: fan})
		if err != nil {
			t.Fatal(err)
		}
		if st.Statuses[a] != boxoffice.SeatSold || st.Statuses[b] != boxoffice.SeatSold {
			t.Errorf("seat map: %s %q, %s %q, want both %q (unavailable)", a, st.Statuses[a], b, st.Statuses[b], boxoffice.SeatSold)
		}

		res = env.mustChange(t, boxoffice.BlockActionUnblock, a)
		if fmt.Sprint(res.Blocked) != fmt.Sprint([]string{b}) {
			t.Errorf("after unblock: blocked %v, want [%s]", res.Blocked, b)
		}
		env.mustHold(t, env.Event.ID, fan, holdTTL, a)
		if got, want := env.audits(t), []string{"block " + a + "," + b, "unblock " + a}; !slices.Equal(got, want) {
			t.Errorf("audit log: got %q, want %q", got, want)
		}
	})

	// Blocking blocked seats or unblocking free ones changes nothing, says
	// so, and leaves the audit log as it was.
	t.Run("NoOp", func(t *testing.T) {
		env := newBlocksEnv(t, 20)
		a, b := env.Event.R[0], env.Event.R[1]
		env.mustChange(t, boxoffice.BlockActionBlock, a)
		if res := env.mustChange(t, boxoffice.BlockActionBlock, a); res.Changed || !slices.Equal(res.Blocked, []string{a}) {
			t.Errorf("block of a blocked seat: %+v, want unchanged, [%s] blocked", res, a)
		}
		if res := env.mustChange(t, boxoffice.BlockActionUnblock, b); res.Changed {
			t.Errorf("unblock of a free seat: %+v, want unchanged", res)
		}
		if res := env.mustChange(t, boxoffice.BlockActionBlock, a, b); !res.Changed {
			t.Errorf("block of a blocked and a free seat: %+v, want changed", res)
		}
		if got, want := env.audits(t), []string{"block " + a, "block " + a + "," + b}; !slices.Equal(got, want) {
			t.Errorf("audit log: got %q, want %q", got, want)
		}
	})

	t.Run("ErrBadSeat", func(t *testing.T) {
		env := newBlocksEnv(t, 20)
		a := env.Event.R[0]
		_, err := env.change(boxoffice.BlockActionBlock, a, "Z-1-1", "nonsense", a)
		if boxoffice.ErrorCode(err) != boxoffice.EBADSEAT {
			t.Fatalf("got %v, want %s", err, boxoffice.EBADSEAT)
		}
		if got, want := err.(*boxoffice.Error).Details["seats"], []string{"nonsense", a, "Z-1-1"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("bad seats: got %v, want %v", got, want)
		}
		if got := env.blockedRows(t); len(got) != 0 {
			t.Errorf("blocked after a refused block: %v", got)
		}
		if _, err := env.change(boxoffice.BlockActionBlock); boxoffice.ErrorCode(err) != boxoffice.EBADSEAT {
			t.Errorf("no seats: got %v, want %s", err, boxoffice.EBADSEAT)
		}
		if _, err := env.change("freeze", a); boxoffice.ErrorCode(err) != boxoffice.EBADREQUEST {
			t.Errorf("action freeze: got %v, want %s", err, boxoffice.EBADREQUEST)
		}
		if _, err := env.B.ChangeBlocks(context.Background(), boxoffice.BlockRequest{EventID: env.Event.ID + 1000, AdminID: env.Admin, Action: "block", Seats: []string{a}}); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
			t.Errorf("no such event: got %v, want %s", err, boxoffice.ENOTFOUND)
		}
		env.mustHold(t, env.Event.ID, newHoldAccount(t, env.DB), holdTTL, a)
	})

	t.Run("ErrTaken", func(t *testing.T) {
		env := newBlocksEnv(t, 20)
		held, sold, unpaid, free := env.Event.R[0], env.Event.R[1], env.Event.R[2], env.Event.R[3]
		env.mustHold(t, env.Event.ID, newHoldAccount(t, env.DB), holdTTL, held)
		sellSeats(t, env.DB, env.Event.ID, newHoldAccount(t, env.DB), sold)
		pendingOrder(t, env.DB, env.Event.ID, newHoldAccount(t, env.DB), unpaid)

		for _, tt := range []struct {
			seats []string
			want  []string
		}{
			{[]string{free, held, sold, unpaid}, []string{held, sold, unpaid}},
			{[]string{free, sold, unpaid}, []string{sold, unpaid}}, // decided in PostgreSQL
		} {
			_, err := env.change(boxoffice.BlockActionBlock, tt.seats...)
			if boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
				t.Fatalf("block %v: got %v, want %s", tt.seats, err, boxoffice.ECONFLICT)
			}
			e := err.(*boxoffice.Error)
			got := e.Details["seats"].([]string)
			wantSorted := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, wantSorted) {
				t.Errorf("block %v: refused for %v, want %v", tt.seats, got, wantSorted)
			}
			for _, l := range tt.want {
				if !strings.Contains(fmt.Sprint(e.Msg.Args["Seats"]), l) {
					t.Errorf("block %v: the sentence's seats %v do not name %s", tt.seats, e.Msg.Args["Seats"], l)
				}
			}
		}
		if got := env.blockedRows(t); len(got) != 0 {
			t.Errorf("blocked after refused blocks: %v", got)
		}
		if len(env.audits(t)) != 0 {
			t.Errorf("audit log after refused blocks: %v", env.audits(t))
		}
		// Nothing was left blocked in Redis either.
		env.mustHold(t, env.Event.ID, newHoldAccount(t, env.DB), holdTTL, free)
	})

	t.Run("AlreadyBlockedStaysOnRefusal", func(t *testing.T) {
		env := newBlocksEnv(t, 20)
		a, sold := env.Event.R[0], env.Event.R[1]
		env.mustChange(t, boxoffice.BlockActionBlock, a)
		sellSeats(t, env.DB, env.Event.ID, newHoldAccount(t, env.DB), sold)
		if _, err := env.change(boxoffice.BlockActionBlock, a, sold); boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
			t.Fatalf("block of a blocked and a sold seat: got %v, want %s", err, boxoffice.ECONFLICT)
		}
		if _, err := env.hold(env.Event.ID, newHoldAccount(t, env.DB), holdTTL, a); boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
			t.Errorf("hold of a seat still blocked: got %v, want %s", err, boxoffice.ESEATTAKEN)
		}
	})

	t.Run("SurvivesRedisLoss", func(t *testing.T) {
		env := newBlocksEnv(t, 20)
		a := env.Event.R[0]
		env.mustChange(t, boxoffice.BlockActionBlock, a)
		forgetRedis(t, env.R)
		fresh := env.instance(t, nil) // another process: no copy in memory
		req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: newHoldAccount(t, env.DB), Limit: limit, TTL: holdTTL}
		if _, err := fresh.Hold(context.Background(), req, []string{a}); boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
			t.Fatalf("hold of a blocked seat after Redis lost its data: got %v, want %s", err, boxoffice.ESEATTAKEN)
		}
		env.mustChange(t, boxoffice.BlockActionUnblock, a)
		if _, err := fresh.Hold(context.Background(), req, []string{a}); err != nil {
			t.Errorf("hold after unblock: %v", err)
		}
	})

	t.Run("LoadDuringUnblock", func(t *testing.T) {
		// A load that read PostgreSQL before an unblock committed must not
		// write the seat back as blocked.
		env := newBlocksEnv(t, 20)
		a := env.Event.R[0]
		env.mustChange(t, boxoffice.BlockActionBlock, a)
		forgetRedis(t, env.R)
		loader := env.instance(t, nil)
		var once sync.Once
		store.SetAfterSoldRead(loader, func() {
			once.Do(func() { env.mustChange(t, boxoffice.BlockActionUnblock, a) })
		})
		req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: newHoldAccount(t, env.DB), Limit: limit, TTL: holdTTL}
		if _, err := loader.Hold(context.Background(), req, []string{a}); err != nil {
			t.Fatalf("hold after an unblock that raced the load: %v", err)
		}
	})
}

// TestBlocks_Race has hundreds of fans holding (by hand and by best
// available) the seats an admin blocks and unblocks over many rounds: a
// seat is never both held and blocked, every block is refused or leaves
// none of its seats held, and a blocked seat is never held afterwards.
func TestBlocks_Race(t *testing.T) {
	const fans, rounds, seats, tries = 200, 30, 300, 200
	env := newBlocksEnv(t, 2*seats)
	ctx := context.Background()
	r := env.Event.R
	accounts := make([]int64, fans)
	for i := range accounts {
		accounts[i] = newHoldAccount(t, env.DB)
	}
	var blocked sync.Map // label -> true while blocked (set before the block's call, cleared after the unblock's)
	var violations atomic.Int64
	var refused, done atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(stop)
		rng := rand.New(rand.NewPCG(1, 2))
		for range rounds {
			for range tries {
				pick := []string{r[rng.IntN(seats)], r[rng.IntN(seats)]}
				slices.Sort(pick)
				pick = slices.Compact(pick)
				_, err := env.change(boxoffice.BlockActionBlock, pick...)
				if boxoffice.ErrorCode(err) == boxoffice.ECONFLICT {
					refused.Add(1)
					continue
				} else if err != nil {
					t.Errorf("block %v: %v", pick, err)
					return
				}
				done.Add(1)
				for _, l := range pick {
					blocked.Store(l, true)
				}
				// No seat of a block is held: not before it (refused),
				// not after it (the hold script refuses).
				for _, l := range pick {
					if owner := env.lock(t, env.Event.ID, l); owner != "" {
						violations.Add(1)
						t.Errorf("seat %s blocked and held by %s", l, owner)
					}
				}
				for _, l := range pick {
					blocked.Delete(l)
				}
				env.mustChange(t, boxoffice.BlockActionUnblock, pick...)
				break
			}
		}
	})
	storetest.AtOnce(fans, func(i int) {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: accounts[i], Limit: limit, TTL: holdTTL}
		for {
			select {
			case <-stop:
				return
			default:
			}
			var res boxoffice.HoldResult
			var err error
			if i%4 == 0 {
				res, err = env.H.HoldBest(ctx, req, "R", 2)
			} else {
				res, err = env.H.Hold(ctx, req, []string{r[rng.IntN(seats)]})
			}
			if err == nil {
				for _, l := range res.Held {
					if _, ok := blocked.Load(l); ok {
						violations.Add(1)
						t.Errorf("account %d holds %s while it is blocked", accounts[i], l)
					}
				}
				if _, err := env.H.Release(ctx, boxoffice.Shopper{EventID: env.Event.ID, AccountID: accounts[i]}, res.Held[0]); err != nil {
					t.Errorf("release %s: %v", res.Held[0], err)
				}
				for _, l := range res.Held[1:] {
					env.H.Release(ctx, boxoffice.Shopper{EventID: env.Event.ID, AccountID: accounts[i]}, l)
				}
			}
		}
	})
	wg.Wait()
	if done.Load() == 0 {
		t.Errorf("no block went through in %d rounds (%d refused): the race tested nothing", rounds, refused.Load())
	}
	if got := env.blockedRows(t); len(got) != 0 {
		t.Errorf("blocked after every block was undone: %v", got)
	}
	t.Logf("%d blocks done, %d refused for held seats, %d violations", done.Load(), refused.Load(), violations.Load())
}

// Many admins block and unblock the same seats at once, round after round:
// every audit entry records a real change (its before differs from its
// after), and there is one entry per change reported as made.
func TestBlocks_NoOpRace(t *testing.T) {
	const admins, rounds = 100, 20
	env := newBlocksEnv(t, 10)
	seats := env.Event.R[:2]
	var changed atomic.Int64
	for round := range rounds {
		storetest.AtOnce(admins, func(i int) {
			action := boxoffice.BlockActionBlock
			if (i+round)%2 == 1 {
				action = boxoffice.BlockActionUnblock
			}
			res, err := env.change(action, seats...)
			switch {
			case boxoffice.ErrorCode(err) == boxoffice.ECONFLICT: // another change under way
			case err != nil:
				t.Errorf("%s %v: %v", action, seats, err)
			case res.Changed:
				changed.Add(1)
			}
		})
	}
	var entries, same int
	err := env.DB.Pool.QueryRow(context.Background(), `
		SELECT count(*), count(*) FILTER (WHERE before = after) FROM audit_log
		WHERE event_id = $1 AND action IN ('block', 'unblock')`, env.Event.ID).Scan(&entries, &same)
	if err != nil {
		t.Fatal(err)
	}
	if same != 0 || int64(entries) != changed.Load() || entries == 0 {
		t.Errorf("%d audit entries, %d of them with before = after; want %d (the changes made), none unchanged", entries, same, changed.Load())
	}
}

// Seats left per grade count neither sold nor blocked seats nor those in
// unpaid orders, which count as held instead.
func TestEvents_FindEventByID_LeftAndHeld(t *testing.T) {
	env := newBlocksEnv(t, 20) // R: A-1-1..A-1-10, S: B-1-1..B-1-10
	r := env.Event.R
	sellSeats(t, env.DB, env.Event.ID, newHoldAccount(t, env.DB), r[0])
	env.mustChange(t, boxoffice.BlockActionBlock, r[1], r[2])
	pendingOrder(t, env.DB, env.Event.ID, newHoldAccount(t, env.DB), r[3], r[4], r[5])
	ev, err := (&store.Events{DB: env.DB}).FindEventByID(context.Background(), env.Event.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range ev.Grades {
		want := [3]int{10, 10, 0}
		if g.Code == "R" {
			want = [3]int{10, 4, 3}
		}
		if got := [3]int{g.SeatsTotal, g.SeatsLeft, g.SeatsHeld}; got != want {
			t.Errorf("grade %s: total, left, held %v, want %v", g.Code, got, want)
		}
	}
}

// A block reported done is in PostgreSQL: in each of many events at once,
// an admin blocks a pair of sold seats, again while refused, as a refund
// frees them, round after round. A block of a seat sold when the block
// looked and free a moment later must either be refused (ECONFLICT,
// nothing blocked) or block the seat; never answer done with no
// blocked_seat row, which the next load of Redis's copy (or its rebuild
// after Redis lost its data) would drop, freeing a seat the admin was told
// is blocked.
func TestBlocks_RaceWithRefunds(t *testing.T) {
	t.Parallel()
	events, rounds := 40, 8
	if storetest.ChaosLong() {
		events, rounds = 80, 20
	}
	ctx := context.Background()
	env := newBlocksEnv(t, 4)
	var done, refused atomic.Int64
	for round := range rounds {
		evs := make([]fixtureEvent, events)
		buyers := make([]int64, events)
		for k := range evs {
			evs[k], buyers[k] = newHoldEvent(t, env.DB, 4), newHoldAccount(t, env.DB) // R: 2 seats
			sellSeats(t, env.DB, evs[k].ID, buyers[k], evs[k].R...)
			if _, err := env.H.SeatStatuses(ctx, boxoffice.Shopper{EventID: evs[k].ID, AccountID: 1}); err != nil {
				t.Fatalf("load the sold seats: %v", err)
			}
		}
		refunded := make([]atomic.Bool, events)
		blocked := make([]atomic.Bool, events) // a block reported done
		started := make([]chan struct{}, events)
		for k := range started {
			started[k] = make(chan struct{})
		}
		storetest.AtOnce(2*events, func(i int) {
			if i < events {
				<-started[i] // the refund races the first block
				refundSeats(t, env.holdsEnv, evs[i].ID, buyers[i], evs[i].R)
				refunded[i].Store(true)
				return
			}
			k := i - events
			close(started[k])
			for again := true; again; {
				again = !refunded[k].Load() // one try more after the refund
				_, err := env.B.ChangeBlocks(ctx, boxoffice.BlockRequest{
					EventID: evs[k].ID, AdminID: env.Admin, Action: boxoffice.BlockActionBlock, Seats: evs[k].R,
				})
				switch boxoffice.ErrorCode(err) {
				case "":
					done.Add(1)
					blocked[k].Store(true)
					return
				case boxoffice.ECONFLICT:
					refused.Add(1)
				default:
					t.Errorf("round %d: block %v of event %d: %v", round, evs[k].R, evs[k].ID, err)
					return
				}
			}
		})
		for k, ev := range evs {
			got, err := env.B.BlockedSeats(ctx, ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			if blocked[k].Load() && len(got) != len(ev.R) {
				t.Errorf("round %d: block of %v reported done, but PostgreSQL has blocked %v", round, ev.R, got)
			}
		}
		if t.Failed() {
			return
		}
	}
	if done.Load() == 0 {
		t.Errorf("no block went through (%d refused): the race tested nothing", refused.Load())
	}
	t.Logf("%d blocks done, %d refused for seats sold when they looked", done.Load(), refused.Load())
}
