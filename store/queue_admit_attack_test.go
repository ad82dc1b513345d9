package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// 200 calls on two instances race 20 ticks of 450 fans (three parts each)
// under a cap of 2,000 live tokens: no tick admits more than its batch, no
// fan twice, the admitted are the head of the line, the live entries stay
// within the cap and each was reported by an Admit.
func TestQueue_Admit_PartsUnderCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	q2 := sameQueue(t, q)
	const fans, ticks, per, capN = 3000, 20, 10, 2000
	mustJoin(t, q, 1, fans)
	s := admission(450)
	s.MaxShoppers = capN
	n := ticks * per
	results := make([]store.AdmitResult, n)
	errs := make([]error, n)
	storetest.AtOnce(n, func(i int) {
		results[i], errs[i] = []*store.Queue{q, q2}[i%2].Admit(ctx, s, int64(i/per+1), time.Second)
	})
	byTick := map[int64]int{}
	seen := map[int64]bool{}
	for i, r := range results {
		if errs[i] != nil {
			t.Errorf("Admit(tick %d): %v", i/per+1, errs[i])
			continue
		}
		byTick[int64(i/per+1)] += len(r.Admitted)
		for _, a := range r.Admitted {
			if seen[a] {
				t.Fatalf("fan %d admitted twice", a)
			}
			seen[a] = true
		}
	}
	for tick, c := range byTick {
		if c > 450 {
			t.Errorf("tick %d admitted %d > batch 450", tick, c)
		}
	}
	if len(seen) > capN {
		t.Errorf("%d admitted > cap %d", len(seen), capN)
	}
	for a := int64(1); a <= int64(len(seen)); a++ {
		if !seen[a] {
			t.Fatalf("fan %d skipped while %d admitted", a, len(seen))
		}
	}
	live := 0
	for a := int64(1); a <= fans; a++ {
		if _, _, ok := entryOf(t, q, a); ok {
			live++
			if !seen[a] {
				t.Errorf("fan %d has an entry but no Admit reported it", a)
			}
		}
	}
	if live > capN {
		t.Errorf("%d entry keys > cap %d", live, capN)
	}
}

// A tick cut short by the end of the line is over: fans who join after it
// wait for the next tick, even if an admitter runs the tick again. The tick
// index is one of a 200 ms clock (about 9e9), carried exactly between its
// parts.
func TestQueue_Admit_EndOfLineEndsTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	const tick = int64(9_000_000_001)
	every := 200 * time.Millisecond
	s := admission(2250) // 450 a 200 ms tick
	if b := boxoffice.AdmissionBatch(s.Rate, every, tick); b != 450 {
		t.Fatalf("AdmissionBatch = %d, want 450 a 200 ms tick", b)
	}
	mustJoin(t, q, 1, 250)
	r, err := q.Admit(ctx, s, tick, every)
	if err != nil || len(r.Admitted) != 250 {
		t.Fatalf("Admit = %+v, %v", r, err)
	}
	mustJoin(t, q, 251, 600)
	again, err := q.Admit(ctx, s, tick, every)
	if err != nil || again.Done || len(again.Admitted) != 0 {
		t.Errorf("Admit(same tick) after the end of the line = done %v, %d admitted, %v; want the tick over", again.Done, len(again.Admitted), err)
	}
	// The next tick admits the 350 waiting in two parts, and is over.
	r, err = q.Admit(ctx, s, tick+1, every)
	if err != nil || len(r.Admitted) != 350 || r.Admitted[0] != 251 || r.Admitted[349] != 600 {
		t.Fatalf("Admit(tick+1) = %d admitted, %v; want fans 251 to 600", len(r.Admitted), err)
	}
	if again, err := q.Admit(ctx, s, tick+1, every); err != nil || again.Done {
		t.Errorf("Admit(tick+1) again = %+v, %v; want the tick over", again, err)
	}
}

// The cap reached exactly at a part's end, a batch of exactly one and two
// parts, and a batch of none each admit what they should and end the tick;
// a paused tick after them admits nobody.
func TestQueue_Admit_PartBoundaries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct{ rate, capN, want int }{{450, 200, 200}, {450, 400, 400}, {200, 0, 200}, {400, 0, 400}, {0, 0, 0}} {
		q := newQueue(t)
		mustJoin(t, q, 1, 500)
		s := admission(c.rate)
		s.MaxShoppers = c.capN
		r, err := q.Admit(ctx, s, 1, time.Second)
		if err != nil || len(r.Admitted) != c.want || !r.Done {
			t.Fatalf("%+v: Admit = %d admitted, done %v, %v; want %d, done", c, len(r.Admitted), r.Done, err, c.want)
		}
		again, err := q.Admit(ctx, s, 1, time.Second)
		if err != nil || again.Done || len(again.Admitted) != 0 {
			t.Errorf("%+v: Admit again = %+v, %v; want the tick over", c, again, err)
		}
		s.Paused = true
		p, err := q.Admit(ctx, s, 2, time.Second)
		if err != nil || len(p.Admitted) != 0 {
			t.Errorf("%+v: a paused tick = %+v, %v; want nobody admitted", c, p, err)
		}
	}
}
