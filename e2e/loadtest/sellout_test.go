package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The sell-out's milestones are given in seconds after the first
// admission, and one that did not happen (zero) is left out.
func TestSellOutTimeline(t *testing.T) {
	first := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return first.Add(time.Duration(s * float64(time.Second))) }
	got := sellOutTimeline(first, at(9.8), at(0.4), at(14.25), at(1.5), at(41))
	want := "the sell-out, from the event's first admission: the last fan admitted at 9.8 s, the first seat held at 0.4 s, the last seat held at 14.2 s, the first seat sold at 1.5 s, the last seat sold at 41.0 s"
	if got != want {
		t.Errorf("sellOutTimeline:\n got %s\nwant %s", got, want)
	}
	got = sellOutTimeline(first, at(9.8), time.Time{}, time.Time{}, at(1.5), at(41))
	want = "the sell-out, from the event's first admission: the last fan admitted at 9.8 s, the first seat sold at 1.5 s, the last seat sold at 41.0 s"
	if got != want {
		t.Errorf("sellOutTimeline without holds:\n got %s\nwant %s", got, want)
	}
}

// Paced polls: fans are admitted one after another over 300 ms; each is
// reported admitted exactly once, the polls stop once all are, and each
// waiting fan polls about once an interval, never again while its poll is
// unanswered.
func TestPollPaced(t *testing.T) {
	const n, every = 40, 200 * time.Millisecond
	start := time.Now()
	admitAt := func(i int) time.Time { return start.Add(time.Duration(i) * 300 * time.Millisecond / n) }
	var mu sync.Mutex
	polls := make([]int, n)
	var inFlight [n]atomic.Bool
	var twice atomic.Bool
	reported := make([]int, n)
	rec := newRecorder("polls", nil)
	pollPaced(context.Background(), n, every, start.Add(5*time.Second), 4, rec, func(ctx context.Context, i int) (string, bool) {
		if !inFlight[i].CompareAndSwap(false, true) {
			twice.Store(true)
		}
		defer inFlight[i].Store(false)
		mu.Lock()
		polls[i]++
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return kindOK, !time.Now().Before(admitAt(i))
	}, func(i int) {
		mu.Lock()
		reported[i]++
		mu.Unlock()
	})
	took := time.Since(start)
	if twice.Load() {
		t.Error("a fan polled again while its poll was unanswered")
	}
	total := 0
	for i := range n {
		if reported[i] != 1 {
			t.Errorf("fan %d reported admitted %d times, want once", i, reported[i])
		}
		// Admitted by 300 ms, polled every 200 ms: at most 3 polls.
		if polls[i] < 1 || polls[i] > 3 {
			t.Errorf("fan %d polled %d times, want 1 to 3 (every %v until admitted)", i, polls[i], every)
		}
		total += polls[i]
	}
	if rec.Count() != total {
		t.Errorf("%d polls recorded, %d sent", rec.Count(), total)
	}
	if took > 300*time.Millisecond+every+200*time.Millisecond {
		t.Errorf("polling took %v after the last admission at 300 ms, want it to stop once all are admitted", took)
	}
}

// The polls end at the deadline though fans still wait.
func TestPollPaced_Deadline(t *testing.T) {
	start := time.Now()
	pollPaced(context.Background(), 10, 100*time.Millisecond, start.Add(250*time.Millisecond), 2, newRecorder("polls", nil),
		func(ctx context.Context, i int) (string, bool) { return kindOK, false },
		func(i int) { t.Errorf("fan %d reported admitted, never was", i) })
	if took := time.Since(start); took > time.Second {
		t.Errorf("polling took %v, want it to end at the 250 ms deadline", took)
	}
}

// The sell-out target's "this run" says what the phase measures, its time,
// the invariants and fans, and the sell-out through the measurement steps.
func TestSellOutGot(t *testing.T) {
	sold := &Phase{Figures: []Figure{{Name: "sell-out", Text: "the last seat sold 41.0 s after the event's first admission", Value: 41}}}
	measured := &Phase{Figures: []Figure{{Name: sellOutMeasured, Text: "…", Value: 79.1}}}
	got := sellOutGot(sold, measured, 0, 20000)
	want := "a fresh event of the arena, each fan holding and paying as its poll shows it admitted, no measurement step between: the last seat sold 41.0 s after the event's first admission; 0 invariants broken; 20000 fans; the sell-out through the measurement steps of phase 4: 79.1 s"
	if got != want {
		t.Errorf("sellOutGot:\n got %s\nwant %s", got, want)
	}
}

// Phase 5's profile lasts the admissions' length less a tick, in whole
// seconds, so that it ends inside the buying: never under 1 s, never over
// the buying limit or 10 s.
func TestSelloutProfile(t *testing.T) {
	for _, c := range []struct {
		n, rate     int
		tick, limit time.Duration
		want        time.Duration
	}{
		{300, 100, 200 * time.Millisecond, 20 * time.Second, 2 * time.Second},
		{20000, 2000, time.Second, 6 * time.Minute, 9 * time.Second},
		{200000, 2000, time.Second, 6 * time.Minute, 10 * time.Second},
		{20000, 2000, time.Second, 4 * time.Second, 4 * time.Second},
		{50, 100, 200 * time.Millisecond, 20 * time.Second, time.Second},
		{10, 0, 200 * time.Millisecond, 20 * time.Second, 9 * time.Second},
	} {
		if got := selloutProfile(c.n, c.rate, c.tick, c.limit); got != c.want {
			t.Errorf("selloutProfile(%d, %d, %v, %v) = %v, want %v", c.n, c.rate, c.tick, c.limit, got, c.want)
		}
	}
}

// The sell-out target is named after the run's seats and fans, in the
// issue's words for the full run.
func TestSellOutTarget(t *testing.T) {
	if got, want := sellOutTarget(15000, 20000), "Sell-out of the 15,000-seat arena to 20,000 fans"; got != want {
		t.Errorf("full run: got %q, want %q", got, want)
	}
	if got, want := sellOutTarget(15000, 200), "Sell-out of the 15,000-seat arena to 200 fans"; got != want {
		t.Errorf("200 fans: got %q, want %q", got, want)
	}
}
