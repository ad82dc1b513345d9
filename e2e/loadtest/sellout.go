package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sellOut is phase 5: the sale as fans meet it, on a fresh event of the
// same arena (b.sellout, created at set-up: 15,000 seats, the same limit).
// Every fan joins its line while admission is paused (a step of its own,
// before the sale); then admission is let go at the waiting phase's rate,
// and each fan, as the position poll it sends every -sellout-poll (the
// waiting page's poll when its stream fails, 2 s) shows it admitted, at
// once loads the seat map page (-admitted-map-share of the fans), holds as
// the buying loop's fans do (buyer.hold: the same mix of picking from the
// map and best available, the same races and retries) and pays as they do
// (buyer.pay), at most C (-conns) fans at once, while others still wait.
// No measurement step runs in between: the sell-out is timed from the
// event's first admission to its last seat sold.
func (b *Bench) sellOut(ctx context.Context) *Phase {
	p := b.phase("5. Sell-out")
	defer b.endPhase(p)
	switch {
	case !b.admitted:
		p.Status = "not available: no fan was admitted in the waiting phase"
		return p
	case !b.routes.holds:
		p.Status = notAvailable("POST /events/{id}/holds")
		return p
	}
	ev := b.sellout
	joinURL, statusURL := b.url("/events/%d/queue", ev.EventID), b.url("/events/%d/queue/status", ev.EventID)
	// The observer joins first, so that it is admitted in the first batch
	// and reloads the fans' shared view of the seats from then on.
	if a, err := call(ctx, b.client, http.MethodPost, joinURL, b.observer, url.Values{}); err != nil || a.Status != http.StatusOK {
		p.Status = "failed: the observer's join: " + kind(a, err, http.StatusOK)
		return p
	}
	n := len(b.fans)
	joins := newRecorder(fmt.Sprintf("sell-out: POST /events/{id}/queue, closed loop, %d connections: every fan joins the fresh event's line, admission paused", b.cfg.Conns),
		b.ui.Bar("sell-out: joins", int64(n))).
		measureCPU(ctx, b.cpu, "sell-out: joins (before admission)")
	ClosedLoop(ctx, b.cfg.Conns, Counter(n, time.Time{}), joins, func(ctx context.Context, i int) string {
		a, err := call(ctx, b.client, http.MethodPost, joinURL, b.fans[i], url.Values{})
		return kind(a, err, http.StatusOK)
	})
	b.addStep(p, joins)
	u, err := b.newBuyer(ctx, ev.EventID, "sell-out: ")
	if err != nil {
		p.Status = "failed: " + err.Error()
		return p
	}

	how, err := b.setAdmission(ctx, ev.EventID, false, b.cfg.AdmitRate)
	if err != nil {
		p.Status = "failed: " + err.Error()
		return p
	}
	t0 := time.Now()
	// The steps' windows (CPU, Redis commands, PostgreSQL's activity, the
	// profile) open as admission is let go and close when the last fan is
	// done buying.
	polls := newRecorder(fmt.Sprintf("sell-out: GET /events/{id}/queue/status, each waiting fan every %v", b.cfg.SellOutPoll), nil).
		measureCPU(ctx, b.cpu, "sell-out: position polls (beside the fans buying)").beside("fans buying")
	pages := newRecorder("sell-out: GET /events/{id}/seats (the seat map page, as a browser asks), each fan as its poll shows it admitted", nil)
	buyers := newRecorder(fmt.Sprintf("sell-out: fans buying, each fan as its poll shows it admitted, at most %d at once (seat map page, hold, order, pay, confirmation, order page; one row per fan)", b.cfg.Conns),
		b.ui.Bar("sell-out: fans", int64(n))).
		measureCPU(ctx, b.cpu, "sell-out: fans buying")
	m := b.measure(ctx, "sellout", selloutProfile(n, b.cfg.AdmitRate, b.cfg.AdmissionTick, b.cfg.BuyTimeout))
	p.note(fmt.Sprintf("admission let go at %d fans/s on %v ticks, %s", b.cfg.AdmitRate, b.cfg.AdmissionTick, how))
	deadline := t0.Add(b.cfg.WaitTimeout + b.cfg.BuyTimeout)
	if !b.awaitAdmission(ctx, statusURL, b.observer, deadline) {
		m.prof()
		m.activity()
		p.Status = "failed: the observer was not admitted"
		return p
	}
	stopRefresh := u.refreshView(ctx)
	stopWatch := b.watchAdmissions(ctx, ev)
	admitted := make(chan int, n)
	go func() {
		defer close(admitted)
		pollPaced(ctx, n, b.cfg.SellOutPoll, deadline, b.cfg.Conns/2, polls, func(ctx context.Context, i int) (string, bool) {
			a, err := call(ctx, b.client, http.MethodGet, statusURL, b.fans[i], nil)
			k := kind(a, err, http.StatusOK)
			return k, k == kindOK && admittedIn(a)
		}, func(i int) { admitted <- i })
	}()
	next := func() (int, bool) {
		select {
		case i, ok := <-admitted:
			return i, ok && time.Now().Before(deadline)
		case <-ctx.Done():
			return 0, false
		}
	}
	pageURL := b.url("/events/%d/seats", ev.EventID)
	ClosedLoop(ctx, b.cfg.Conns, next, buyers, func(ctx context.Context, i int) string {
		f := b.fans[i]
		if u.routes.seats && rand.Float64() < b.cfg.AdmittedMapShare {
			if k := pages.Time(func() string {
				a, err := loadPage(ctx, b.client, pageURL, f)
				return kind(a, err, http.StatusOK)
			}); k != kindOK {
				return "seat map page: " + k
			}
		}
		k := u.hold(ctx, f)
		if k != kindOK || !b.paid {
			return k
		}
		return u.pay(ctx, f)
	})
	for range admitted { // the fans the deadline left unserved
	}
	b.endMeasure(ctx, p, m, "the fans bought", u.tot.confirmedOrders.Load, buyers, polls)
	stopRefresh()
	if pages.Count() > 0 {
		b.addStep(p, pages)
	}
	u.addHoldSteps(p)
	u.addPaySteps(p)

	adm, err := stopWatch()
	if err != nil {
		p.Status = "failed: " + err.Error()
		return p
	}
	b.reportAdmissions(p, adm, t0)
	sold := u.figures(ctx, p, ev.Seats)
	b.selloutSoldOut = sold == ev.Seats
	firstSold, lastSold, err := b.sales(ctx, ev.EventID)
	if err != nil {
		p.note("sell-out time: " + err.Error())
		return p
	}
	ts := make([]time.Time, 0, len(adm))
	for _, at := range adm {
		ts = append(ts, at)
	}
	if len(ts) == 0 || lastSold == nil {
		p.note("sell-out time: not measured: no admission or no seat sold")
		return p
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	d := lastSold.Sub(ts[0])
	what := "the last seat sold"
	if !b.selloutSoldOut {
		what = fmt.Sprintf("not sold out: %d of %d seats sold, the last", sold, ev.Seats)
	}
	p.figure("sell-out", fmt.Sprintf("%s %.1f s after the event's first admission", what, d.Seconds()), d.Seconds())
	p.note(sellOutTimeline(ts[0], ts[len(ts)-1], unixTime(u.tot.firstHeld.Load()), unixTime(u.tot.lastHeld.Load()), *firstSold, *lastSold))
	return p
}

// selloutProfile is how long phase 5 profiles the server from the moment
// admission is let go: the time the n fans take to be admitted at rate a
// second, less one tick, in whole seconds (the profiler's unit), at least
// 1 s and at most min(limit, 10 s). The last fan is admitted no sooner
// and buys after its poll shows it, so the profile ends inside the
// buying and leaves its window as it is.
func selloutProfile(n, rate int, tick, limit time.Duration) time.Duration {
	d := (time.Duration(n)*time.Second/time.Duration(max(rate, 1)) - tick).Truncate(time.Second)
	return max(min(d, limit, 10*time.Second), time.Second)
}

// admissionWatch is how often watchAdmissions reads the new admissions.
const admissionWatch = 200 * time.Millisecond

// watchAdmissions reads sale's new admissions (readAdmissions, those above
// the highest expiry read so far) every admissionWatch until the returned
// function is called, which reads once more and returns them all: a fan's
// admission time is gone from Redis once it has bought, so it must be read
// while the fan still shops. A fan admitted and gone between two reads is
// missed; the observer, admitted first, never leaves, so the first
// admission is always read.
func (b *Bench) watchAdmissions(ctx context.Context, sale Sale) func() (map[int64]time.Time, error) {
	adm := map[int64]time.Time{}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		var after float64 = 1
		var err error
		t := time.NewTicker(admissionWatch)
		defer t.Stop()
		for {
			if after, err = b.readAdmissions(wctx, sale, after, adm); err != nil && wctx.Err() == nil {
				done <- err
				return
			}
			select {
			case <-wctx.Done():
				_, err = b.readAdmissions(ctx, sale, after, adm)
				done <- err
				return
			case <-t.C:
			}
		}
	}()
	return func() (map[int64]time.Time, error) {
		stop()
		return adm, <-done
	}
}

// unixTime is the time of Unix ns, zero for 0.
func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// sellOutTimeline says when the sell-out's milestones came, in seconds
// after first (the first admission): the last admission, the first and the
// last seat held, the first and the last seat sold; a zero time is left
// out.
func sellOutTimeline(first, lastAdmitted, firstHeld, lastHeld, firstSold, lastSold time.Time) string {
	var parts []string
	for _, m := range []struct {
		what string
		at   time.Time
	}{
		{"the last fan admitted", lastAdmitted},
		{"the first seat held", firstHeld},
		{"the last seat held", lastHeld},
		{"the first seat sold", firstSold},
		{"the last seat sold", lastSold},
	} {
		if !m.at.IsZero() {
			parts = append(parts, fmt.Sprintf("%s at %.1f s", m.what, m.at.Sub(first).Seconds()))
		}
	}
	return "the sell-out, from the event's first admission: " + strings.Join(parts, ", ")
}

// awaitAdmission polls f's position at statusURL every 50 ms until it
// shows f admitted (true) or deadline passes (false).
func (b *Bench) awaitAdmission(ctx context.Context, statusURL string, f *Fan, deadline time.Time) bool {
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if a, err := call(ctx, b.client, http.MethodGet, statusURL, f, nil); err == nil && a.Status == http.StatusOK && admittedIn(a) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// pollTick is how often pollPaced hands out the polls that are due.
const pollTick = 50 * time.Millisecond

// pollPaced has each of n waiting fans poll its position every `every`, as
// the waiting page does: fan i polls on the ticks (pollTick apart) whose
// number is i modulo every/pollTick, so that the polls spread evenly over
// the interval. workers send the due polls; a fan whose last poll is still
// unanswered is not polled again. poll sends fan i's poll and returns its
// kind and whether it shows the fan admitted; admitted is called once for
// each fan admitted. It returns when every fan has seen its admission, at
// deadline or when ctx ends. Every poll is recorded in rec.
func pollPaced(ctx context.Context, n int, every time.Duration, deadline time.Time, workers int,
	rec *Recorder, poll func(ctx context.Context, i int) (string, bool), admitted func(i int)) {
	slots := max(int(every/pollTick), 1)
	due := make(chan int, n)
	inFlight := make([]atomic.Bool, n)
	seen := make([]atomic.Bool, n)
	var waiting atomic.Int64
	waiting.Store(int64(n))
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for i := range due {
				if ctx.Err() == nil {
					var ok bool
					rec.Time(func() string {
						var k string
						k, ok = poll(ctx, i)
						return k
					})
					if ok && seen[i].CompareAndSwap(false, true) {
						waiting.Add(-1)
						admitted(i)
					}
				}
				inFlight[i].Store(false)
			}
		})
	}
	t := time.NewTicker(pollTick)
	defer t.Stop()
	for tick := 0; waiting.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil; tick++ {
		for i := tick % slots; i < n; i += slots {
			if !seen[i].Load() && inFlight[i].CompareAndSwap(false, true) {
				due <- i
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	close(due)
	wg.Wait()
}
