package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Names of the hold step's two steps, by which the targets and ratios
// find them.
const (
	holdStepName    = "hold step: POST /events/{id}/holds"
	releaseStepName = "hold step: DELETE /events/{id}/holds/{seat}"
)

// holdStep measures the hold request itself, before the buying loop, so
// that its rate is the server's for holds and nothing else (in the buying
// loop the same requests share the connections with seat map loads and
// best-available holds): a closed loop on C connections in which each
// admitted fan, in turn, holds 1 to 4 seats it picked by hand (JSON, form
// `seat` repeated) from the seats not yet handed out, in the map's order,
// so that no two fans ask for the same seat and no race is lost; then a
// closed loop in which every held seat is released
// (DELETE /events/{id}/holds/{seat}, JSON), which leaves every seat free
// for the buying loop. Each loop ends when the seats or the fans run out.
func (b *Bench) holdStep(ctx context.Context, p *Phase, view *seatView) {
	id := b.sale.EventID
	holdsURL := b.url("/events/%d/holds", id)
	fans := b.entered
	var next atomic.Int64 // the next seat of view.seats to hand out
	var mu sync.Mutex
	var held []heldSeats // what each successful hold holds, for the releases
	limit := max(b.sale.Limit, 1)

	prof := b.startProfile(ctx, "holds", min(max(time.Duration(len(fans)/3000)*time.Second, time.Second), 10*time.Second))
	holds := newRecorder(fmt.Sprintf("%s (JSON, 1 to 4 seats picked by hand, each fan once), closed loop, %d connections", holdStepName, b.cfg.Conns),
		b.ui.Bar("hold step: holds", int64(len(fans)))).
		measureCPU(ctx, b.cpu, "holds (hold step)")
	ClosedLoop(ctx, b.cfg.Conns, Counter(len(fans), time.Time{}), holds, func(ctx context.Context, i int) string {
		want := min(weighted(wantWeights)+1, limit)
		end := int(next.Add(int64(want)))
		if end > len(view.seats) {
			return kindSkip
		}
		seats := make([]string, want)
		for j := range want {
			seats[j] = view.seats[end-want+j].label
		}
		a, err := call(ctx, b.client, http.MethodPost, holdsURL, fans[i], url.Values{"seat": seats})
		k := kind(a, err, http.StatusOK)
		if k == kindOK {
			mu.Lock()
			held = append(held, heldSeats{fans[i], seats})
			mu.Unlock()
		}
		return k
	})
	hs := b.addStep(p, holds)
	prof()

	var release []heldSeat
	for _, h := range held {
		for _, s := range h.seats {
			release = append(release, heldSeat{h.fan, s})
		}
	}
	releases := newRecorder(fmt.Sprintf("%s (JSON, each seat the hold step held), closed loop, %d connections", releaseStepName, b.cfg.Conns),
		b.ui.Bar("hold step: releases", int64(len(release)))).
		measureCPU(ctx, b.cpu, "releases (hold step)")
	ClosedLoop(ctx, b.cfg.Conns, Counter(len(release), time.Time{}), releases, func(ctx context.Context, i int) string {
		r := release[i]
		a, err := call(ctx, b.client, http.MethodDelete, b.url("/events/%d/holds/%s", id, url.PathEscape(r.seat)), r.fan, nil)
		return kind(a, err, http.StatusOK)
	})
	rs := b.addStep(p, releases)
	p.figure("hold step", fmt.Sprintf("%d of %d admitted fans held %d seats (%d hold requests answered 200), then released them (%d releases answered 200)",
		len(held), len(fans), len(release), hs.OK, rs.OK), float64(hs.OK))
}

// heldSeats is one fan's successful hold in the hold step.
type heldSeats struct {
	fan   *Fan
	seats []string
}

// heldSeat is one seat to release in the hold step.
type heldSeat struct {
	fan  *Fan
	seat string
}
