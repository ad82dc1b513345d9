package store_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// Admission by free places: with max_shoppers shoppers at once, fans who
// buy everything they held or leave the sale free their places, and the
// next tick admits exactly that many from the line, however many admitters
// race; a fan who bought but still holds seats, or who only holds, keeps
// the turn. A leaver's hold racing the leave never outlives the turn.
func TestAdmission_FreePlaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newHoldsEnv(t)
	const fans, capacity = 200, 20
	ev := newHoldEvent(t, env.DB, 3*fans)
	q := &store.Queue{Redis: env.R}
	for a := int64(1); a <= fans; a++ {
		if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: ev.ID, AccountID: a, SessionKey: sess(a)}); err != nil {
			t.Fatal(err)
		}
	}
	seat := func(a int64, i int) string { return ev.Labels[3*(a-1)+int64(i)] }
	shopper := func(a int64) boxoffice.Shopper {
		return boxoffice.Shopper{EventID: ev.ID, AccountID: a, SessionKey: sess(a)}
	}
	hold := func(a int64, labels ...string) error {
		_, err := env.H.Hold(ctx, boxoffice.HoldRequest{EventID: ev.ID, AccountID: a, SessionKey: sess(a), Limit: limit, TTL: holdTTL}, labels)
		return err
	}
	s := boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1000, MaxShoppers: capacity, TokenTTL: time.Hour}
	admit := func(tick int64) store.AdmitResult {
		var done store.AdmitResult
		var n atomic.Int32
		storetest.AtOnce(200, func(int) {
			r, err := q.Admit(ctx, s, tick, time.Second)
			if err != nil {
				t.Errorf("Admit: %v", err)
			}
			if r.Done {
				n.Add(1)
				done = r
			}
		})
		if n.Load() != 1 {
			t.Fatalf("tick %d admitted by %d admitters, want 1", tick, n.Load())
		}
		return done
	}

	batch := admit(1).Admitted
	if len(batch) != capacity {
		t.Fatalf("first tick admitted %d, want the cap %d", len(batch), capacity)
	}
	keeping := map[int64]bool{} // shoppers who must keep their turn
	for tick := int64(2); len(batch) > 0; tick++ {
		for _, a := range batch {
			if err := hold(a, seat(a, 0), seat(a, 1)); err != nil {
				t.Fatalf("tick %d: hold of %d: %v", tick, a, err)
			}
		}
		freed := 0
		racedHolds := make([]error, len(batch))
		storetest.AtOnce(2*len(batch), func(i int) {
			a := batch[i/2]
			switch a % 4 {
			case 0: // leaves the sale while trying to hold one more seat
				if i%2 == 0 {
					if err := env.H.Leave(ctx, shopper(a)); err != nil {
						t.Errorf("Leave of %d: %v", a, err)
					}
				} else {
					racedHolds[i/2] = hold(a, seat(a, 2))
				}
			case 1: // buys everything held
				if i%2 == 0 {
					if err := env.H.MarkSold(ctx, ev.ID, a, []string{seat(a, 0), seat(a, 1)}, 2); err != nil {
						t.Errorf("MarkSold of %d: %v", a, err)
					}
				}
			case 2: // buys one seat and still holds the other
				if i%2 == 0 {
					if err := env.H.MarkSold(ctx, ev.ID, a, []string{seat(a, 0)}, 1); err != nil {
						t.Errorf("MarkSold of %d: %v", a, err)
					}
				}
			}
		})
		for i, a := range batch {
			switch a % 4 {
			case 0, 1:
				freed++
				want := boxoffice.ReasonLeft
				if a%4 == 1 {
					want = boxoffice.ReasonDone
				}
				if err := q.CheckEntry(ctx, ev.ID, a, sess(a)); boxoffice.NoEntryReason(err) != want {
					t.Fatalf("tick %d: entry of %d after leaving or buying all = %v, want ended for reason %s", tick, a, err, want)
				}
				if a%4 == 0 {
					mine, _, err := env.H.MyHolds(ctx, ev.ID, a)
					if err != nil || len(mine) != 0 {
						t.Fatalf("tick %d: leaver %d holds %v (%v), want nothing (the raced hold answered %v)", tick, a, mine, err, racedHolds[i])
					}
					if racedHolds[i] != nil && boxoffice.ErrorCode(racedHolds[i]) != boxoffice.ENOENTRYTOKEN {
						t.Fatalf("tick %d: leaver %d's raced hold: %v", tick, a, racedHolds[i])
					}
				}
			default:
				keeping[a] = true
			}
		}
		for a := range keeping {
			if err := q.CheckEntry(ctx, ev.ID, a, sess(a)); err != nil {
				t.Fatalf("tick %d: shopper %d still holding or shopping lost the turn: %v", tick, a, err)
			}
		}
		st, err := q.QueueStats(ctx, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		r := admit(tick)
		if want := min(freed, st.Waiting); len(r.Admitted) != want || r.Live != len(keeping)+want {
			t.Fatalf("tick %d: admitted %d with %d live, want %d (the places freed) with %d live", tick, len(r.Admitted), r.Live, want, len(keeping)+want)
		}
		batch = r.Admitted
		if slices.ContainsFunc(batch, func(a int64) bool { return keeping[a] }) {
			t.Fatalf("tick %d admitted a shopper again: %v", tick, batch)
		}
	}
	// Admission stops only when the line is empty or every place is taken
	// by a fan who keeps it.
	st, err := q.QueueStats(ctx, ev.ID)
	if err != nil || st.LiveTokens != len(keeping) || (st.Waiting > 0 && len(keeping) != capacity) {
		t.Fatalf("at the end %d waiting and %d shoppers (%v), want an empty line or %d shoppers keeping their places",
			st.Waiting, st.LiveTokens, err, capacity)
	}
}

// Leave refuses a session that does not hold the turn and changes nothing.
func TestHolds_Leave_OtherSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newHoldsEnv(t)
	ev := newHoldEvent(t, env.DB, 10)
	q := &store.Queue{Redis: env.R}
	if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: ev.ID, AccountID: 1, SessionKey: "mine"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Admit(ctx, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 10, TokenTTL: time.Hour}, 1, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := env.H.Hold(ctx, boxoffice.HoldRequest{EventID: ev.ID, AccountID: 1, SessionKey: "mine", Limit: limit, TTL: holdTTL}, ev.R[:2]); err != nil {
		t.Fatal(err)
	}
	err := env.H.Leave(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1, SessionKey: "copied"})
	wantCodeReason(t, err, boxoffice.ENOENTRYTOKEN, boxoffice.ReasonOtherSession)
	if err := q.CheckEntry(ctx, ev.ID, 1, "mine"); err != nil {
		t.Fatalf("turn after a refused leave: %v", err)
	}
	if mine, _, err := env.H.MyHolds(ctx, ev.ID, 1); err != nil || len(mine) != 2 {
		t.Fatalf("holds after a refused leave = %v (%v), want 2", mine, err)
	}
	wantCodeReason(t, env.H.Leave(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 2, SessionKey: "x"}), boxoffice.ENOENTRYTOKEN, boxoffice.ReasonNone)
}
