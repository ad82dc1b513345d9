package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// seatView is the fans' shared, slightly stale picture of the seat map: the
// seats by grade, best first, and which are taken (held or sold as far as
// the bench knows). Fans choose from it as people choose from a seat map
// that was loaded a moment ago, so some lose races. It is safe for
// concurrent use.
type seatView struct {
	mu     sync.Mutex
	grades []string         // best (dearest) first
	order  map[string][]int // grade -> seats best first (row, then section, then number)
	seats  []viewSeat
	index  map[string]int // label -> seats index
}

type viewSeat struct {
	label, grade string
	taken        bool
}

// newSeatView reads event's seats and grades from PostgreSQL (set-up: the
// seat map never changes once the event exists).
func (b *Bench) newSeatView(ctx context.Context, event int64) (*seatView, error) {
	v := &seatView{order: map[string][]int{}, index: map[string]int{}}
	rows, err := b.db.Pool.Query(ctx, `SELECT code FROM grade WHERE event_id = $1 ORDER BY price DESC, code`, event)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, err
		}
		v.grades = append(v.grades, g)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = b.db.Pool.Query(ctx, `SELECT label, grade FROM event_seat WHERE event_id = $1
		ORDER BY row_label::int, section, number::int`, event)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var s viewSeat
		if err := rows.Scan(&s.label, &s.grade); err != nil {
			return nil, err
		}
		v.index[s.label] = len(v.seats)
		v.order[s.grade] = append(v.order[s.grade], len(v.seats))
		v.seats = append(v.seats, s)
	}
	return v, rows.Err()
}

// update takes the seats' statuses from a seat map answer (GET
// /events/{id}/seats as JSON): "free" is free, any other status taken.
func (v *seatView) update(body []byte) error {
	var m struct {
		Seats []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"seats"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("seat map: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range m.Seats {
		if i, ok := v.index[s.ID]; ok {
			v.seats[i].taken = s.Status != "free"
		}
	}
	return nil
}

// take marks seats taken.
func (v *seatView) take(labels []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, l := range labels {
		if i, ok := v.index[l]; ok {
			v.seats[i].taken = true
		}
	}
}

// free returns the number of seats not taken.
func (v *seatView) free() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, s := range v.seats {
		if !s.taken {
			n++
		}
	}
	return n
}

// gradeWeights skews the fans toward the best grades: of four grades, 40%
// want the best, 30% the next, then 20% and 10%.
var gradeWeights = []float64{0.4, 0.3, 0.2, 0.1}

// wantWeights is how many seats a fan wants: 1 to 4, mostly 2.
var wantWeights = []float64{0.15, 0.45, 0.15, 0.25}

func weighted(w []float64) int {
	x := rand.Float64()
	for i, p := range w {
		if x < p {
			return i
		}
		x -= p
	}
	return len(w) - 1
}

// pick chooses up to want free seats next to each other in the list of one
// grade: the fan's preferred grade (weighted toward the best) or, when it
// has too few free seats, the next one down (then from the best again).
// Within the grade it starts at a seat drawn with a skew toward the front
// rows (the square of a uniform draw: half the fans aim at the best quarter
// of what is free), so that fans crowd the best seats as people do. It
// returns nil when no seat is free.
func (v *seatView) pick(want int) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	start := min(weighted(gradeWeights), len(v.grades)-1)
	for k := range len(v.grades) {
		g := v.grades[(start+k)%len(v.grades)]
		var free []int
		for _, i := range v.order[g] {
			if !v.seats[i].taken {
				free = append(free, i)
			}
		}
		if len(free) == 0 || len(free) < want && k < len(v.grades)-1 {
			continue
		}
		n := min(want, len(free))
		u := rand.Float64()
		at := min(int(u*u*float64(len(free)-n+1)), len(free)-n)
		out := make([]string, n)
		for j := range n {
			out[j] = v.seats[free[at+j]].label
		}
		return out
	}
	return nil
}

// grade returns a grade with at least want seats free in the view, the
// fan's preferred one (weighted toward the best) or the next one down, as
// pick does; "" when no seat is free.
func (v *seatView) grade(want int) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	start := min(weighted(gradeWeights), len(v.grades)-1)
	for k := range len(v.grades) {
		g := v.grades[(start+k)%len(v.grades)]
		free := 0
		for _, i := range v.order[g] {
			if !v.seats[i].taken {
				free++
			}
		}
		if free > 0 && (free >= want || k == len(v.grades)-1) {
			return g
		}
	}
	return ""
}

// takeGrade marks every seat of the grade taken (the server said none is
// left).
func (v *seatView) takeGrade(g string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, i := range v.order[g] {
		v.seats[i].taken = true
	}
}

// buyRecorders are the steps of fans buying, one per kind of request.
type buyRecorders struct {
	seats, holds, best, orders, pay, confirm, order *Recorder
}

// newBuyRecorders starts the steps of fans buying, their names after
// prefix ("" in phase 4, "sell-out: " in phase 5).
func newBuyRecorders(prefix string) buyRecorders {
	return buyRecorders{
		seats:   newRecorder(prefix+"GET /events/{id}/seats (whole seat map)", nil),
		holds:   newRecorder(prefix+"POST /events/{id}/holds", nil),
		best:    newRecorder(prefix+"POST /events/{id}/holds (best available: grade, quantity)", nil),
		orders:  newRecorder(prefix+"POST /events/{id}/orders", nil),
		pay:     newRecorder(prefix+"POST /sandbox-pg/checkout (action=pay)", nil),
		confirm: newRecorder(prefix+"GET /payments/success (confirmation)", nil),
		order:   newRecorder(prefix+"GET /orders/{id}", nil),
	}
}

// buyTotals counts what the fans got, and the hold requests by kind: by
// hand (a list of seats) and best available (a grade and a quantity);
// firstHeld and lastHeld are when the first and the last successful hold
// was answered (Unix ns, 0 before any).
type buyTotals struct {
	held, confirmedOrders, confirmedSeats, raceLost, soldOut atomic.Int64
	handAsked, bestAsked, bestHeld, notTogether              atomic.Int64
	firstHeld, lastHeld                                      atomic.Int64
}

// sawHold records a successful hold answered at t.
func (t *buyTotals) sawHold(at time.Time) {
	ns := at.UnixNano()
	for old := t.firstHeld.Load(); old == 0 || ns < old; old = t.firstHeld.Load() {
		if t.firstHeld.CompareAndSwap(old, ns) {
			break
		}
	}
	for old := t.lastHeld.Load(); ns > old; old = t.lastHeld.Load() {
		if t.lastHeld.CompareAndSwap(old, ns) {
			break
		}
	}
}

// routes says which of the buying routes the binary has (phase 4 asks).
type routes struct{ seats, holds, orders, sandbox bool }

// buyer is one event's buying, shared by the fans who buy there: the
// event, the fans' shared view of its seats, the steps' recorders and the
// totals. Phase 4's buying loop and phase 5's sell-out each have one.
type buyer struct {
	b      *Bench
	event  int64
	view   *seatView
	recs   buyRecorders
	tot    buyTotals
	routes routes
}

// newBuyer reads event's seats for the fans' shared view; the recorders'
// names start with prefix.
func (b *Bench) newBuyer(ctx context.Context, event int64, prefix string) (*buyer, error) {
	view, err := b.newSeatView(ctx, event)
	if err != nil {
		return nil, fmt.Errorf("seat view: %w", err)
	}
	return &buyer{b: b, event: event, view: view, recs: newBuyRecorders(prefix), routes: b.routes}, nil
}

// refreshView has the observer (who must be admitted to the event) reload
// the seat map (GET /events/{id}/seats, JSON) every -seat-map-refresh into
// the shared view, until the returned function is called; that function
// waits for the last reload.
func (u *buyer) refreshView(ctx context.Context) func() {
	if !u.routes.seats {
		return func() {}
	}
	b := u.b
	rctx, stop := context.WithCancel(ctx)
	refreshed := make(chan struct{})
	go func() {
		defer close(refreshed)
		t := time.NewTicker(b.cfg.SeatMapRefresh)
		defer t.Stop()
		for {
			var a answer
			var err error
			if u.recs.seats.Time(func() string {
				a, err = call(rctx, b.client, http.MethodGet, b.url("/events/%d/seats", u.event), b.observer, nil)
				return kind(a, err, http.StatusOK)
			}) == kindOK {
				u.view.update(a.Body)
			}
			select {
			case <-rctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		stop()
		<-refreshed
	}
}

// addHoldSteps adds the hold requests' steps to p: the holds by hand,
// and the best-available holds and seat map loads when there were any.
func (u *buyer) addHoldSteps(p *Phase) {
	u.b.addStep(p, u.recs.holds)
	for _, r := range []*Recorder{u.recs.best, u.recs.seats} {
		if r.Count() > 0 {
			u.b.addStep(p, r)
		}
	}
}

// addPaySteps adds the checkout requests' steps that ran to p.
func (u *buyer) addPaySteps(p *Phase) {
	for _, r := range []*Recorder{u.recs.orders, u.recs.pay, u.recs.confirm, u.recs.order} {
		if r.Count() > 0 {
			u.b.addStep(p, r)
		}
	}
}

// figures adds what the fans got at the event to p (seats held, races
// lost, seats sold in PostgreSQL of seats, orders the fans saw confirmed)
// and returns the seats sold.
func (u *buyer) figures(ctx context.Context, p *Phase, seats int) int {
	var sold int
	if err := u.b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM sold_seat WHERE event_id = $1`, u.event).Scan(&sold); err != nil {
		p.note("sold seats: " + err.Error())
	}
	tot := &u.tot
	p.figure("held", fmt.Sprintf("%d seats held by the fans (%d by best available); %d fans found no seat left and sent nothing",
		tot.held.Load(), tot.bestHeld.Load(), tot.soldOut.Load()), float64(tot.held.Load()))
	share := func(n, of int64) float64 {
		if of == 0 {
			return 0
		}
		return 100 * float64(n) / float64(of)
	}
	p.figure("lost races without best available", fmt.Sprintf("%d of %d hold requests choosing seats from the map (%.1f%%) lost a race (409 seat_taken) and were retried",
		tot.raceLost.Load(), tot.handAsked.Load(), share(tot.raceLost.Load(), tot.handAsked.Load())), float64(tot.raceLost.Load()))
	p.figure("lost races with best available", fmt.Sprintf("%d of %d best-available requests (share %.2f of the fans, -best-share) (%.1f%%) found no block of that size together (409 not_together) and asked again for fewer; none can lose a race for a seat",
		tot.notTogether.Load(), tot.bestAsked.Load(), u.b.cfg.BestShare, share(tot.notTogether.Load(), tot.bestAsked.Load())), float64(tot.notTogether.Load()))
	p.figure("sold", fmt.Sprintf("%d of %d seats sold (PostgreSQL); the fans saw %d orders confirmed with %d seats",
		sold, seats, tot.confirmedOrders.Load(), tot.confirmedSeats.Load()), float64(sold))
	p.figure("confirmed by the fans", fmt.Sprintf("%d orders the fans saw CONFIRMED on their order pages", tot.confirmedOrders.Load()), float64(tot.confirmedOrders.Load()))
	return sold
}

// sales returns when event's first and last seat was sold (sold_seat's
// sold_at, PostgreSQL's clock); both nil when none was.
func (b *Bench) sales(ctx context.Context, event int64) (first, last *time.Time, err error) {
	err = b.db.Pool.QueryRow(ctx, `SELECT min(sold_at), max(sold_at) FROM sold_seat WHERE event_id = $1`, event).Scan(&first, &last)
	return first, last, err
}

// outcomeGaveUp is the kind of a fan's hold that lost every race: no error
// of the server.
const outcomeGaveUp = "gave up after losing every race"

// sellOutMeasured is the name of phase 4's figure of the sell-out through
// the measurement steps.
const sellOutMeasured = "sell-out through the measurement steps"

// buying is phase 4: first the hold step (holdStep), which measures the
// hold request alone; then two steps as a sale's first minutes go. Holding:
// every admitted fan, in turn on C connections, loads the seat map (a share
// of them; the others choose from the shared copy the observer reloads),
// holds 1 to 4 seats and tries other seats when it loses a race (409
// seat_taken), until no seat is free; a share of the fans (-best-share)
// asks for the best available instead (holdBest). Paying: each fan with holds creates
// the order, pays in the sandbox PG (POST /sandbox-pg/checkout action=pay),
// follows the PG's redirect to /payments/success and reads the order.
// Its sell-out time runs through the waiting phase's steps and the hold
// step, which no real sale has (phase 5 times a sale as fans meet it).
func (b *Bench) buying(ctx context.Context) *Phase {
	p := b.phase("4. Holding and buying")
	defer b.endPhase(p)
	if !b.admitted {
		p.Status = "not available: no fan was admitted"
		return p
	}
	id := b.sale.EventID
	seatsURL, holdsURL, ordersURL := b.url("/events/%d/seats", id), b.url("/events/%d/holds", id), b.url("/events/%d/orders", id)

	// Which routes this binary has, asked as the observer (admitted first).
	probe := func(method, u string, form url.Values) (bool, error) {
		a, err := call(ctx, b.client, method, u, b.observer, form)
		if err != nil {
			return false, err
		}
		return !missing(a), nil
	}
	hasSeats, err := probe(http.MethodGet, seatsURL, nil)
	if err != nil {
		p.Status = "failed: " + err.Error()
		return p
	}
	hasHolds, _ := probe(http.MethodPost, holdsURL, url.Values{})
	hasOrders, _ := probe(http.MethodPost, ordersURL, url.Values{})
	hasSandbox, _ := probe(http.MethodPost, b.url("/sandbox-pg/checkout"), url.Values{})
	b.routes = routes{seats: hasSeats, holds: hasHolds, orders: hasOrders, sandbox: hasSandbox}
	if !hasHolds {
		p.Status = notAvailable("POST /events/{id}/holds")
		return p
	}
	if !hasSeats {
		p.note(notAvailable("GET /events/{id}/seats") + ": fans choose from the seat list read at set-up and what the holds' answers tell")
	}
	if !hasOrders || !hasSandbox {
		var gone []string
		if !hasOrders {
			gone = append(gone, "POST /events/{id}/orders")
		}
		if !hasSandbox {
			gone = append(gone, "POST /sandbox-pg/checkout")
		}
		p.note("paying not available (404): " + strings.Join(gone, ", ") + " not on this binary; fans only hold seats")
	}
	u, err := b.newBuyer(ctx, id, "")
	if err != nil {
		p.Status = "failed: " + err.Error()
		return p
	}
	b.holdStep(ctx, p, u.view)

	deadline := time.Now().Add(b.cfg.BuyTimeout)
	stopRefresh := u.refreshView(ctx)
	n := len(b.fans)
	holding := make([]bool, n)
	holders := newRecorder(fmt.Sprintf("fans holding seats, closed loop, %d connections (one row per fan who tried, races included)", b.cfg.Conns),
		b.ui.Bar("holding: fans", int64(n))).
		measureCPU(ctx, b.cpu, "fans holding (buying loop)")
	prof := b.startProfile(ctx, "holding", min(b.cfg.BuyTimeout, 5*time.Second))
	ClosedLoop(ctx, b.cfg.Conns, Counter(n, deadline), holders, func(ctx context.Context, i int) string {
		k := u.hold(ctx, b.fans[i])
		holding[i] = k == kindOK
		return k
	})
	stopRefresh()
	b.addStep(p, holders)
	u.addHoldSteps(p)
	prof()

	if b.paid = hasOrders && hasSandbox; b.paid {
		var payers []*Fan
		for i, ok := range holding {
			if ok {
				payers = append(payers, b.fans[i])
			}
		}
		buyers := newRecorder(fmt.Sprintf("fans paying, closed loop, %d connections (order, pay, confirmation, order page)", b.cfg.Conns),
			b.ui.Bar("paying: fans", int64(len(payers)))).
			measureCPU(ctx, b.cpu, "fans paying")
		m := b.measure(ctx, "checkout", min(b.cfg.BuyTimeout, 5*time.Second))
		ClosedLoop(ctx, b.cfg.Conns, Counter(len(payers), deadline), buyers, func(ctx context.Context, i int) string {
			return u.pay(ctx, payers[i])
		})
		b.payActivity = b.endMeasure(ctx, p, m, "the fans paid", u.tot.confirmedOrders.Load, buyers)
		u.addPaySteps(p)
	}

	sold := u.figures(ctx, p, b.sale.Seats)
	b.soldOut = sold == b.sale.Seats
	if _, last, err := b.sales(ctx, id); err != nil {
		p.note("sell-out time: " + err.Error())
	} else if last != nil && !b.firstAdmission.IsZero() {
		d := last.Sub(b.firstAdmission)
		what := "the last seat sold"
		if !b.soldOut {
			what = fmt.Sprintf("not sold out: %d of %d seats sold, the last", sold, b.sale.Seats)
		}
		p.figure(sellOutMeasured, fmt.Sprintf("%s %.1f s after the first admission, the measurement steps between (no real sale has them; phase 5 times the sale as fans meet it)", what, d.Seconds()), d.Seconds())
		b.sellOutSplit = sellOutParts(p, b.firstAdmission, d)
		p.note(b.sellOutSplit)
	}
	return p
}

// sellOutParts says how the sell-out through the measurement steps, d
// (from first, the first admission, to the last seat sold), splits into
// the steps that ran one after the other: the time before phase p began
// (the waiting phase's steps, measured after the first admission), p's
// hold step, its fans holding and its fans paying, and what lies between
// them. Times are in seconds, from the steps' Offset and Seconds.
func sellOutParts(p *Phase, first time.Time, d time.Duration) string {
	before := p.start.Sub(first).Seconds()
	var holdFrom, holdTo float64 = -1, 0
	for _, st := range p.Steps {
		if !strings.HasPrefix(st.Name, "hold step:") {
			continue
		}
		if holdFrom < 0 || st.Offset < holdFrom {
			holdFrom = st.Offset
		}
		holdTo = max(holdTo, st.Offset+st.Seconds)
	}
	holdStep := max(holdTo-holdFrom, 0)
	holding, _ := p.step("fans holding")
	paying, _ := p.step("fans paying")
	rest := d.Seconds() - before - holdStep - holding.Seconds - paying.Seconds
	return fmt.Sprintf("the sell-out through the measurement steps, %.1f s, step by step: %.1f s after the first admission before this phase (the waiting phase's steps: position polls and seat map pages), %.1f s the hold step (every seat held and released, measured on its own), %.1f s fans holding, %.1f s fans paying, %.1f s between the steps",
		d.Seconds(), before, holdStep, holding.Seconds, paying.Seconds, rest)
}

// hold is one fan's hold: it returns kindOK when the fan holds seats,
// outcomeGaveUp, kindSkip when the fan's view has no seat left (the fan
// sends nothing), or the kind of the request that failed.
func (u *buyer) hold(ctx context.Context, f *Fan) string {
	b, recs, tot, view := u.b, u.recs, &u.tot, u.view
	if u.routes.seats && rand.Float64() < b.cfg.SeatMapShare {
		var a answer
		var err error
		if k := recs.seats.Time(func() string {
			a, err = call(ctx, b.client, http.MethodGet, b.url("/events/%d/seats", u.event), f, nil)
			return kind(a, err, http.StatusOK)
		}); k != kindOK {
			return "seat map: " + k
		}
		view.update(a.Body)
	}
	want := weighted(wantWeights) + 1
	if rand.Float64() < b.cfg.BestShare {
		return u.holdBest(ctx, f, want)
	}
	for range b.cfg.HoldRetries + 1 {
		seats := view.pick(want)
		if seats == nil {
			tot.soldOut.Add(1)
			return kindSkip
		}
		var a answer
		var err error
		tot.handAsked.Add(1)
		k := recs.holds.Time(func() string {
			a, err = call(ctx, b.client, http.MethodPost, b.url("/events/%d/holds", u.event), f, url.Values{"seat": seats})
			return kind(a, err, http.StatusOK)
		})
		if k == kindOK {
			tot.sawHold(time.Now())
			view.take(seats)
			tot.held.Add(int64(len(seats)))
			return kindOK
		}
		if a.Status != http.StatusConflict || errorCode(a.Body) != "seat_taken" {
			return "hold: " + k
		}
		tot.raceLost.Add(1)
		var taken struct {
			Seats []string `json:"seats"`
		}
		json.Unmarshal(a.Body, &taken)
		if len(taken.Seats) == 0 {
			taken.Seats = seats
		}
		view.take(taken.Seats)
	}
	return outcomeGaveUp
}

// holdBest is one fan's best-available hold: want seats of a grade that
// the view says has them. A 409 not_together asks again for fewer seats
// (half, down to 1), or of another grade when none is left. It returns as
// hold does.
func (u *buyer) holdBest(ctx context.Context, f *Fan, want int) string {
	b, recs, tot, view := u.b, u.recs, &u.tot, u.view
	for range b.cfg.HoldRetries + 1 {
		g := view.grade(want)
		if g == "" {
			tot.soldOut.Add(1)
			return kindSkip
		}
		var a answer
		var err error
		tot.bestAsked.Add(1)
		k := recs.best.Time(func() string {
			a, err = call(ctx, b.client, http.MethodPost, b.url("/events/%d/holds", u.event), f,
				url.Values{"grade": {g}, "quantity": {strconv.Itoa(want)}})
			return kind(a, err, http.StatusOK)
		})
		if k == kindOK {
			tot.sawHold(time.Now())
			var held struct {
				Held []string `json:"held"`
			}
			json.Unmarshal(a.Body, &held)
			view.take(held.Held)
			tot.held.Add(int64(len(held.Held)))
			tot.bestHeld.Add(int64(len(held.Held)))
			return kindOK
		}
		if a.Status != http.StatusConflict || errorCode(a.Body) != "not_together" {
			return "hold: " + k
		}
		tot.notTogether.Add(1)
		var left struct {
			Left int `json:"left"`
		}
		json.Unmarshal(a.Body, &left)
		if left.Left == 0 {
			view.takeGrade(g)
		} else {
			want = max(1, min(want/2, left.Left))
		}
	}
	return outcomeGaveUp
}

// pay is one fan's checkout of its holds: the order (JSON), the sandbox
// PG's Pay and the PG's redirect back (the confirmation; both as the
// browser sends them) and the order (JSON), which must say CONFIRMED. It
// returns kindOK or the kind of the failing step.
func (u *buyer) pay(ctx context.Context, f *Fan) string {
	b, recs, tot := u.b, u.recs, &u.tot
	var order struct {
		OrderID     string `json:"order_id"`
		CheckoutURL string `json:"checkout_url"`
	}
	var a answer
	var err error
	if k := recs.orders.Time(func() string {
		a, err = call(ctx, b.client, http.MethodPost, b.url("/events/%d/orders", u.event), f, url.Values{})
		return kind(a, err, http.StatusCreated)
	}); k != kindOK {
		return "order: " + k
	}
	if err := json.Unmarshal(a.Body, &order); err != nil || order.CheckoutURL == "" {
		return "order: no checkout_url in the answer"
	}
	checkout, err := url.Parse(b.base)
	if err == nil {
		checkout, err = checkout.Parse(order.CheckoutURL)
	}
	if err != nil {
		return "order: bad checkout_url"
	}
	form := checkout.Query()
	form.Set("action", "pay")
	checkout.RawQuery = ""
	if k := recs.pay.Time(func() string {
		a, err = browse(ctx, b.client, http.MethodPost, checkout.String(), f, form)
		return kind(a, err, http.StatusSeeOther)
	}); k != kindOK {
		return "pay: " + k
	}
	success, err := checkout.Parse(a.Header.Get("Location"))
	if err != nil || !strings.Contains(success.Path, "/payments/success") {
		return "pay: redirected to " + a.Header.Get("Location")
	}
	if k := recs.confirm.Time(func() string {
		a, err = browse(ctx, b.client, http.MethodGet, success.String(), f, nil)
		return kind(a, err, http.StatusSeeOther)
	}); k != kindOK {
		return "confirm: " + k
	}
	orderURL, err := success.Parse(a.Header.Get("Location"))
	if err != nil {
		return "confirm: bad redirect"
	}
	var got struct {
		Status string            `json:"status"`
		Seats  []json.RawMessage `json:"seats"`
	}
	if k := recs.order.Time(func() string {
		a, err = call(ctx, b.client, http.MethodGet, orderURL.String(), f, nil)
		return kind(a, err, http.StatusOK)
	}); k != kindOK {
		return "order page: " + k
	}
	if json.Unmarshal(a.Body, &got) != nil || got.Status != "CONFIRMED" {
		return "order page: status " + strconv.Quote(got.Status) + ", want CONFIRMED"
	}
	tot.confirmedOrders.Add(1)
	tot.confirmedSeats.Add(int64(len(got.Seats)))
	return kindOK
}
