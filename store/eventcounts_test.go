package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/redis/go-redis/v9"
)

// seatStates sets up one case of TestEvents_GradeCounts on an event whose
// grade R has seats r[0..9] and S s[0..9]: each field lists the seats put in
// that state, and a seat may be in several. Live holds are made first (the
// hold script refuses a seat it knows is sold), then PostgreSQL is written
// directly, so that every overlap can be built.
type seatStates struct {
	held    [][]string // live holds in Redis, one account per hold
	sold    [][]string // one CONFIRMED order each
	blocked []string
	unpaid  [][]string // one PENDING_PAYMENT order each
	// stale are members of held:{e} that are no live hold of the event's
	// seats: a label the event does not have, and an expired hold.
	stale bool
}

// counts are a grade's SeatsTotal, SeatsLeft and SeatsHeld.
type counts [3]int

// TestEvents_GradeCounts checks the seat counts of FindEventByID (sold,
// blocked and unpaid seats) and Holds.EventWithHolds (live holds too) over
// overlapping states across grades: each seat counts once, sold or blocked
// before held, held before left, and a grade without seats counts 0.
func TestEvents_GradeCounts(t *testing.T) {
	r := func(i int) string { return fmt.Sprintf("A-1-%d", i+1) }
	s := func(i int) string { return fmt.Sprintf("B-1-%d", i+1) }
	tests := []struct {
		name   string
		states seatStates
		// want and wantLive are R's, S's and V's counts (V has no seats)
		// without and with the live holds.
		want, wantLive [3]counts
	}{
		{
			name:     "NothingTaken",
			want:     [3]counts{{10, 10, 0}, {10, 10, 0}, {0, 0, 0}},
			wantLive: [3]counts{{10, 10, 0}, {10, 10, 0}, {0, 0, 0}},
		},
		{
			name: "EachStateAlone",
			states: seatStates{
				held: [][]string{{s(0)}}, sold: [][]string{{r(0)}}, blocked: []string{r(1)}, unpaid: [][]string{{r(2), r(3)}},
			},
			want:     [3]counts{{10, 6, 2}, {10, 10, 0}, {0, 0, 0}},
			wantLive: [3]counts{{10, 6, 2}, {10, 9, 1}, {0, 0, 0}},
		},
		{
			// R: r0 sold and held, r1 blocked and held, r2 unpaid and held,
			// r3 sold and unpaid, r4 blocked and unpaid, r5 sold and
			// blocked: five gone, one held. S: s0 in two unpaid orders, s1
			// held, s2 unpaid and held in two holds' worth of Redis.
			name: "Overlapping",
			states: seatStates{
				held:    [][]string{{r(0), r(1)}, {r(2)}, {s(1), s(2)}},
				sold:    [][]string{{r(0), r(3)}, {r(5)}},
				blocked: []string{r(1), r(4), r(5)},
				unpaid:  [][]string{{r(2), r(3), r(4)}, {s(0), s(2)}, {s(0)}},
			},
			want:     [3]counts{{10, 4, 1}, {10, 8, 2}, {0, 0, 0}},
			wantLive: [3]counts{{10, 4, 1}, {10, 7, 3}, {0, 0, 0}},
		},
		{
			name:     "StaleHoldEntries",
			states:   seatStates{held: [][]string{{s(9)}}, stale: true},
			want:     [3]counts{{10, 10, 0}, {10, 10, 0}, {0, 0, 0}},
			wantLive: [3]counts{{10, 10, 0}, {10, 9, 1}, {0, 0, 0}},
		},
		{
			name: "GradeAllGone",
			states: seatStates{
				held:    [][]string{{r(9), s(9)}},
				sold:    [][]string{{r(0), r(1), r(2), r(3), r(4)}, {r(5), r(6), r(7)}},
				blocked: []string{r(8), r(9)},
			},
			want:     [3]counts{{10, 0, 0}, {10, 10, 0}, {0, 0, 0}},
			wantLive: [3]counts{{10, 0, 0}, {10, 9, 1}, {0, 0, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			env := newBlocksEnv(t, 20)
			id := env.Event.ID
			if _, err := env.DB.Pool.Exec(ctx, `INSERT INTO grade (event_id, code, name, price) VALUES ($1, 'V', '{"en": "Void"}', 50000)`, id); err != nil {
				t.Fatal(err)
			}
			for _, labels := range tt.states.held {
				env.mustHold(t, id, newHoldAccount(t, env.DB), time.Minute, labels...)
			}
			if tt.states.stale {
				key := env.R.Key("held:{%d}", id)
				past := time.Now().Add(-time.Minute).UnixMilli()
				future := time.Now().Add(time.Hour).UnixMilli()
				err := env.R.Client.ZAdd(ctx, key, redis.Z{Score: float64(future), Member: "Z-9-9"},
					redis.Z{Score: float64(past), Member: s(8)}).Err()
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, labels := range tt.states.sold {
				sellSeats(t, env.DB, id, newHoldAccount(t, env.DB), labels...)
			}
			for _, label := range tt.states.blocked {
				_, err := env.DB.Pool.Exec(ctx, `INSERT INTO blocked_seat (event_id, seat_label, blocked_by) VALUES ($1, $2, $3)`, id, label, env.Admin)
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, labels := range tt.states.unpaid {
				pendingOrder(t, env.DB, id, newHoldAccount(t, env.DB), labels...)
			}
			for _, read := range []struct {
				name string
				find func(context.Context, int64) (*boxoffice.Event, error)
				want [3]counts
			}{
				{"FindEventByID", (&store.Events{DB: env.DB}).FindEventByID, tt.want},
				{"EventWithHolds", env.H.EventWithHolds, tt.wantLive},
			} {
				ev, err := read.find(ctx, id)
				if err != nil {
					t.Fatalf("%s: %v", read.name, err)
				}
				var got [3]counts
				var codes []string
				for i, g := range ev.Grades {
					if i < len(got) {
						got[i] = counts{g.SeatsTotal, g.SeatsLeft, g.SeatsHeld}
					}
					codes = append(codes, g.Code)
				}
				if fmt.Sprint(codes) != "[R S V]" || got != read.want {
					t.Errorf("%s: grades %v with total, left, held %v; want [R S V] with %v", read.name, codes, got, read.want)
				}
			}
		})
	}
}
