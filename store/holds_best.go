package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice"
)

// bestWindowSeats is about how many seats the first run of hold_best.lua
// of a pass considers (whole runs, at least one): a pick's cost in the
// common case is bounded by it, however large the venue.
const bestWindowSeats = 64

// bestWindowMaxSeats bounds the windows of a pass that goes on: each window
// after one with no block (its seats held) has twice the seats of the one
// before, up to this many, so that a pass through a grade whose runs the
// index lists but cannot give the block (runs it has not read since they
// lost it) takes a few round trips, not one per 64 seats. It bounds how long one
// script keeps Redis busy (a window of 500 seats: about 2 ms a round trip
// on the development machine, 1,000 seats: 9 to 15 ms).
const bestWindowMaxSeats = 512

// bestListed is how many runs of the index a reply of hold_best.lua names
// at most: more than a window holds, so that the next window is made of
// runs the index lists.
const bestListed = 2 * bestWindowSeats

// bestHintMaxAge is how long a hint of where a grade's blocks of a size
// begin is trusted (see bestHint): long enough that fans racing for one
// grade skip the full rows, short enough that seats freed by ended or
// released holds are offered again soon.
const bestHintMaxAge = 2 * time.Second

// seatRun is seats side by side in one row of one grade: consecutive
// numbers of one section's row, in their order along the row. Best is the
// index of its seat nearest the stage.
type seatRun struct {
	labels []string
	best   int
	// first and rank are the run's first label and its rank (index) in
	// its grade's runs boxed once as a script's arguments (appendReindex),
	// set by newBestLayout.
	first, rank any
}

// gradeRuns is an event's seats for best available: each grade's runs, best
// first.
type gradeRuns map[string][]seatRun

// bestLayout is an event's gradeRuns and, for each of its seats' labels,
// the run it is in.
type bestLayout struct {
	grades gradeRuns
	runOf  map[string]runRef
	// index holds, for each grade, the keys of best available's index for
	// the quantities 1 to boxoffice.MaxPerAccountLimit (bestIndexKey, at
	// q-1), boxed once as a script's arguments.
	index map[string][]any
}

// runRef names a run: its grade and its rank (index) in the grade's runs.
type runRef struct {
	grade string
	rank  int
}

// newBestLayout indexes grades by label, boxes each run's first label and
// rank, and keeps each grade's index keys, indexKey(grade, quantity).
func newBestLayout(grades gradeRuns, indexKey func(grade string, quantity int) string) *bestLayout {
	l := &bestLayout{grades: grades, runOf: map[string]runRef{}, index: make(map[string][]any, len(grades))}
	for g, runs := range grades {
		for i := range runs {
			r := &runs[i]
			r.first, r.rank = r.labels[0], i
			for _, label := range r.labels {
				l.runOf[label] = runRef{g, i}
			}
		}
		keys := make([]any, boxoffice.MaxPerAccountLimit)
		for q := range keys {
			keys[q] = indexKey(g, q+1)
		}
		l.index[g] = keys
	}
	return l
}

// bestHint says that, when it was learned (on the store's clock), the runs
// of a grade before run had no block of a number of free seats (of the kind
// its key says), or, with none, that no run had one, and then how many
// seats were free (left) and whether a block that strands a seat was.
// Listed are the runs from run on that the index listed then (see
// bestIndexKey), in order, all of them unless more; nil when not known.
type bestHint struct {
	run     int
	listed  []int
	more    bool
	none    bool
	left    int
	strands bool
	at      time.Time
}

// bestHintKey names a hint: an event's grade, a number of seats, and
// whether blocks that strand a seat count.
type bestHintKey struct {
	event    int64
	grade    string
	quantity int
	strand   bool
}

// HoldBest holds the best quantity free seats of grade side by side in one
// run of a row for req.AccountID (best available), all or none, in one Lua
// script (hold_best.lua) that checks the entry, the sold seats and the
// account's limit as Hold does and holds under the same TTL. Best is the
// order of gradeRuns: runs nearest the stage first, and in a run the block
// nearest its seat nearest the stage. A block that leaves a single free seat
// stranded between taken ones is taken only when no run of the grade has
// one that does not: a first pass looks for those, a second (only when the
// first saw a block that strands) takes the best block left.
//
// The script reads only runs that best available's index in Redis lists
// (see bestIndexKey): those that may still have quantity seats side by
// side neither sold, nor blocked, nor held (a run that holds alone keep
// from giving them is parked until its first hold ends or a release, see
// bestParkedKey). One run of the script considers about
// bestWindowSeats seats of them, from where this process last found the
// grade's blocks of that size to begin (a hint per pass, kept for
// bestHintMaxAge), so that a pick costs one round trip and touches only
// those rows in the common case; when they hold no block (their seats are
// held) it goes on through the runs the index lists, a window per round
// trip, each twice the seats of the one before up to bestWindowMaxSeats
// (so a pass through a grade whose seats are all held takes a few round
// trips, however large the grade). The first pick of a grade and quantity after Redis lost the index
// builds it (two round trips more).
//
// Errors (*boxoffice.Error): ENOENTRYTOKEN; EBADCHOICE for a grade with no
// seats in the event or a quantity under 1 (before Redis is touched), or a
// quantity above what the account may still hold (Details["left"], which
// is never above req.Limit); ENOTTOGETHER when no run of the grade has
// quantity free seats together, with Details["left"] the free seats of the
// runs the search read (those the index lists for the quantity). Input and
// the sold-seat cache as Hold.
func (h *Holds) HoldBest(ctx context.Context, req boxoffice.HoldRequest, grade string, quantity int) (boxoffice.HoldResult, error) {
	if req.Limit < 1 || req.TTL < time.Millisecond {
		return boxoffice.HoldResult{}, fmt.Errorf("hold best seats: limit %d and TTL %v must be positive", req.Limit, req.TTL)
	}
	if quantity < 1 {
		err := boxoffice.NewError(boxoffice.EBADCHOICE, "best_quantity_range", "Max", req.Limit)
		h.refuse(err)
		return boxoffice.HoldResult{}, err
	}
	layout, err := h.eventRuns(ctx, req.EventID)
	if err != nil {
		return boxoffice.HoldResult{}, err
	}
	runs, ok := layout.grades[grade]
	if !ok {
		err := boxoffice.NewError(boxoffice.EBADCHOICE, "best_unknown_grade")
		h.refuse(err)
		return boxoffice.HoldResult{}, err
	}
	var pass bestPass
	for _, strand := range []bool{false, true} {
		pass = h.bestPass(ctx, req, quantity, layout, runs, bestHintKey{req.EventID, grade, quantity, strand})
		if pass.res != nil || pass.err != nil || !pass.strands {
			break
		}
	}
	if pass.err != nil {
		return boxoffice.HoldResult{Mine: pass.mine}, pass.err
	}
	if pass.res != nil {
		exp := toInt64(pass.res[4])
		h.granted.Inc()
		held := stringsOf(pass.res[5])
		return boxoffice.HoldResult{
			Held:      held,
			Added:     len(held), // the best seats are free ones
			TTL:       time.Duration(exp-pass.mine.Now.UnixMilli()) * time.Millisecond,
			ExpiresAt: time.UnixMilli(exp),
			Mine:      pass.mine,
		}, nil
	}
	msg := boxoffice.M("best_not_together", "Quantity", quantity, "Count", pass.left)
	if pass.left == 0 {
		msg = boxoffice.M("best_none_left")
	}
	err = &boxoffice.Error{Code: boxoffice.ENOTTOGETHER, Msg: msg, Details: map[string]any{"left": pass.left}}
	h.refuse(err)
	return boxoffice.HoldResult{Mine: pass.mine}, err
}

// bestPass is what one pass of HoldBest found: the script's 'ok' reply
// (res), or an error (a refusal or Redis's), or neither; the account's own
// part of the seat map as the last run of the script read it; the free
// seats the pass saw, and whether a run had a block that strands a seat.
type bestPass struct {
	res     []any
	err     error
	mine    boxoffice.SeatMapState
	left    int
	strands bool
}

// bestCursor walks a pass's runs: the ranks from start to the last, then
// those before start. Pos is the next rank to consider and end the end of
// the current part; listed are the runs from pos on that the index listed
// (all of them unless more), known or not; seats is about how many seats
// the next window has (bestWindowSeats to bestWindowMaxSeats).
type bestCursor struct {
	pos, end int
	wrapped  bool
	listed   []int
	more     bool
	known    bool
	seats    int
}

// window returns the next runs to send (about c.seats seats): those the
// index listed when it is known, else runs in order; none when the current
// part is done.
func (c *bestCursor) window(runs []seatRun) []int {
	var w []int
	n := 0
	add := func(r int) bool {
		if len(w) > 0 && n+len(runs[r].labels) > c.seats {
			return false
		}
		w, n = append(w, r), n+len(runs[r].labels)
		return true
	}
	if c.known {
		for _, r := range c.listed {
			if r >= c.pos && (r >= c.end || !add(r)) {
				break
			}
		}
		if len(w) > 0 || !c.more {
			return w
		}
		c.known = false // every run listed is behind: go on in order
	}
	for r := c.pos; r < c.end && add(r); r++ {
	}
	return w
}

// bestPass runs hold_best.lua over the grade's runs, a window at a time,
// from the hint of k (whether blocks that strand a seat may be taken), until
// one holds seats or every run the index lists was seen, and keeps the hint
// up to date. A fresh hint that no run has a block cuts the pass to its
// first window (which still checks the entry, and takes a block freed
// since), and the hint then says what the pass would have found.
func (h *Holds) bestPass(ctx context.Context, req boxoffice.HoldRequest, quantity int, layout *bestLayout, runs []seatRun, k bestHintKey) bestPass {
	var p bestPass
	hint := h.bestHintFor(k)
	start := hint.run
	c := bestCursor{pos: start, end: len(runs), listed: hint.listed, more: hint.more, known: hint.listed != nil, seats: bestWindowSeats}
	var first bestHint // the index's runs from start on, as the first reply listed them
	built := false
	for {
		window := c.window(runs)
		if len(window) == 0 {
			if c.wrapped || start == 0 {
				break
			}
			c = bestCursor{pos: 0, end: start, wrapped: true, seats: c.seats}
			continue
		}
		res, err := h.holdBestWindow(ctx, req, quantity, k, runs, window)
		if err != nil {
			p.err = err
			return p
		}
		if res[0] == "index" {
			if built {
				p.err = fmt.Errorf("hold best seats of event %d: index of grade %s missing after building it", req.EventID, k.grade)
				return p
			}
			if p.err = h.buildBestIndex(ctx, req.EventID, k.grade, req.Limit, runs); p.err != nil {
				return p
			}
			built = true
			continue
		}
		if p.mine, err = mineState(res[1], res[2], res[3]); err != nil {
			p.err = fmt.Errorf("hold best seats of event %d: %w", req.EventID, err)
			return p
		}
		switch res[0] {
		case "limit":
			left := p.mine.Left(req.Limit)
			msg := boxoffice.M("best_quantity_left", "Count", left)
			if left == 0 {
				msg = boxoffice.M("best_quantity_none")
			}
			p.err = &boxoffice.Error{
				Code:    boxoffice.EBADCHOICE,
				Msg:     msg,
				Details: map[string]any{"left": left},
			}
			h.refuse(p.err)
			return p
		case "ok":
			// The runs before the first with a block had none; without
			// stranding, the runs before the one picked from had none that
			// may be taken.
			at := int(toInt64(res[6]))
			if !k.strand {
				at = int(toInt64(res[7])) - 1
			}
			listed, more := layout.ranks(k.grade, res[8])
			h.setBestHint(k, bestHint{run: window[at], listed: listed, more: more})
			p.res = res
			return p
		}
		// No run of the window has a block that may be taken ('none').
		listed, more := layout.ranks(k.grade, res[6])
		if first.listed == nil && c.pos == start && !c.wrapped {
			first.listed, first.more = listed, more
		}
		if hint.none {
			p.left, p.strands = hint.left, hint.strands
			return p
		}
		p.left += int(toInt64(res[4]))
		p.strands = p.strands || toInt64(res[5]) == 1
		c.pos, c.listed, c.more, c.known = window[len(window)-1]+1, listed, more, true
		c.seats = min(2*c.seats, bestWindowMaxSeats)
		next := bestHint{run: c.pos % len(runs)}
		if c.pos < len(runs) {
			next.listed, next.more = listed, more
		}
		h.setBestHint(k, next)
	}
	h.setBestHint(k, bestHint{run: start, listed: first.listed, more: first.more, none: true, left: p.left, strands: p.strands})
	return p
}

// ranks maps the first labels of runs of grade that a reply of
// hold_best.lua listed (v) to their ranks, and says whether the index may
// list more (the reply is as long as it may be). Labels of no run of the
// grade (an index built from another layout) are left out.
func (l *bestLayout) ranks(grade string, v any) ([]int, bool) {
	labels := stringsOf(v)
	out := make([]int, 0, len(labels))
	for _, label := range labels {
		if ref, ok := l.runOf[label]; ok && ref.grade == grade && l.grades[grade][ref.rank].labels[0] == label {
			out = append(out, ref.rank)
		}
	}
	return out, len(labels) >= bestListed
}

// holdBestWindow runs hold_best.lua once over the runs of the given
// indexes, in that order, for the quantity and kind of block of k, and
// returns its reply (see runHoldScript).
func (h *Holds) holdBestWindow(ctx context.Context, req boxoffice.HoldRequest, quantity int, k bestHintKey, runs []seatRun, window []int) ([]any, error) {
	seats := 0
	for _, i := range window {
		seats += len(runs[i].labels)
	}
	ek := h.keysOf(req.EventID)
	keys := shopperKeyCount + 3 + seats + 1
	call, v := hotCall(keys + shopperArgCount + 4 + 3*len(window) + seats)
	ak := ek.account(req.AccountID)
	call = appendShopperKeys(call, ek, ak)
	call = append(call, ek.boxed.bestGen, h.bestIndexKey(req.EventID, k.grade, quantity), h.bestParkedKey(req.EventID, k.grade, quantity))
	for _, i := range window {
		for _, l := range runs[i].labels {
			call = append(call, ek.lockPrefix+l)
		}
	}
	call = append(call, ak.holdOrder)
	mayStrand := "0"
	if k.strand {
		mayStrand = "1"
	}
	call = append(appendShopperArgs(call, v, req), quantity, mayStrand, bestListed, len(window))
	for _, i := range window {
		call = append(call, len(runs[i].labels), runs[i].best+1, i)
	}
	for _, i := range window {
		for _, l := range runs[i].labels {
			call = append(call, l)
		}
	}
	return h.runHoldScript(ctx, holdBestScript, req.EventID, keys, call)
}

// bestGenKey is the generation of the event's best-available index,
// best:gen:{e}: an integer (none is 0) that rises when the index may miss a
// run (see hold_index.lua).
func (h *Holds) bestGenKey(eventID int64) string {
	return h.Redis.Key("best:gen:{%d}", eventID)
}

// bestIndexKey is best available's index of an event's grade for a
// quantity, best:{e}:<grade>:<quantity>: a zset of the runs of the grade
// that may still have quantity seats side by side neither sold, nor
// blocked, nor held, member the run's first label, score its rank, plus
// the sentinel member ” that says it was built (hold_index.lua). It may
// list runs that cannot (hold_best.lua drops them when it reads them, or
// parks those that holds alone keep from giving the quantity: see
// bestParkedKey), never leaves out one that can: the scripts that make a
// seat free again (a release's hold_release.lua, hold_leave.lua and
// hold_release_order.lua, a refund's hold_unsold.lua, an unblock's
// hold_block_done.lua) put its run back, a parked run comes back when its
// first hold ends, and the generation rises when a load of the sold-seat
// copy takes seats out of blocked:{e} or rebuilt the copy after Redis lost
// its data (hold_cache.lua), so that the index is built whole again before
// use.
func (h *Holds) bestIndexKey(eventID int64, grade string, quantity int) string {
	return h.Redis.Key("best:{%d}:%s:%d", eventID, grade, quantity)
}

// bestParkedKey is the zset of the runs that bestIndexKey's zset of the
// same grade and quantity parked, best:{e}:<grade>:<quantity>:held: runs
// whose free seats would give the quantity side by side but for seats
// held, member "<rank> <first label>", score the time (ms on Redis's clock)
// the first of those holds ends, when hold_best.lua puts the run back in
// the index; plus the index's sentinel (a zset without it, lost or never
// built, has the index built again).
func (h *Holds) bestParkedKey(eventID int64, grade string, quantity int) string {
	return h.Redis.Key("best:{%d}:%s:%d:held", eventID, grade, quantity)
}

// buildBestIndex builds best available's index of the event's grade for
// the quantities 1 to limit (hold_best_index.lua): those of its zsets not
// built for the index's generation get every run of the grade, and their
// parked runs are forgotten.
func (h *Holds) buildBestIndex(ctx context.Context, eventID int64, grade string, limit int, runs []seatRun) error {
	keys := []string{h.bestGenKey(eventID)}
	for q := 1; q <= min(limit, boxoffice.MaxPerAccountLimit); q++ {
		keys = append(keys, h.bestIndexKey(eventID, grade, q), h.bestParkedKey(eventID, grade, q))
	}
	args := make([]any, 0, 3*len(runs))
	for i, r := range runs {
		args = append(args, i, len(r.labels), r.labels[0])
	}
	if err := holdBestIndexScript.Run(ctx, h.Redis.Client, keys, args...).Err(); err != nil {
		return fmt.Errorf("build the best-available index of grade %s of event %d: %w", grade, eventID, err)
	}
	return nil
}

// reindexArgs returns the keys and arguments of index_runs (hold_index.lua)
// that put the runs of labels, seats of the event that became free again,
// back into best available's index (appendReindex's, the keys as strings).
func (h *Holds) reindexArgs(ctx context.Context, eventID int64, labels []string, first int) ([]string, []any) {
	boxed, args := h.appendReindex(ctx, eventID, labels, nil, first)
	keys := make([]string, len(boxed))
	for i, k := range boxed {
		keys[i] = k.(string)
	}
	return keys, args
}

// appendReindex appends to call the keys of index_runs (hold_index.lua)
// that put the runs of labels, seats of the event that became free again,
// back into best available's index: best:gen:{e} and the zsets, whose
// positions in the script's KEYS start at first; and returns it with the
// arguments, '0' and the triples. When the event's runs cannot be read,
// the arguments say so ('1'), and the script makes the whole index be
// built again instead. The keys and the runs' arguments are the layout's,
// boxed once (bestLayout.index, seatRun.first).
func (h *Holds) appendReindex(ctx context.Context, eventID int64, labels []string, call []any, first int) ([]any, []any) {
	start := len(call)
	call = append(call, h.keysOf(eventID).boxed.bestGen)
	layout, err := h.eventRuns(ctx, eventID)
	if err != nil {
		return call, []any{"1"}
	}
	// at[g][q-1] is the position in KEYS of grade g's zset for quantity q,
	// 0 until it is in call.
	type gradeAt struct {
		grade string
		at    [boxoffice.MaxPerAccountLimit]int
	}
	var gradesAt []gradeAt
	args := make([]any, 1, 1+3*len(labels)*boxoffice.MaxPerAccountLimit)
	args[0] = "0"
	for _, label := range labels {
		ref, ok := layout.runOf[label]
		if !ok {
			continue
		}
		g := slices.IndexFunc(gradesAt, func(a gradeAt) bool { return a.grade == ref.grade })
		if g < 0 {
			g, gradesAt = len(gradesAt), append(gradesAt, gradeAt{grade: ref.grade})
		}
		run, keys := &layout.grades[ref.grade][ref.rank], layout.index[ref.grade]
		for q := 1; q <= min(len(run.labels), boxoffice.MaxPerAccountLimit); q++ {
			at := &gradesAt[g].at[q-1]
			if *at == 0 {
				*at = first + len(call) - start
				call = append(call, keys[q-1])
			}
			args = append(args, *at, run.rank, run.first)
		}
	}
	return call, args
}

// bestHintFor returns k's hint, or the zero hint (from the first run) when
// there is none or it is older than bestHintMaxAge.
func (h *Holds) bestHintFor(k bestHintKey) bestHint {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hint, ok := h.hints[k]; ok && h.Redis.Now().Sub(hint.at) < bestHintMaxAge {
		return hint
	}
	return bestHint{}
}

// setBestHint records hint for k, learned now.
func (h *Holds) setBestHint(k bestHintKey, hint bestHint) {
	hint.at = h.Redis.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hints[k] = hint
}

// bestOrderMaxAge is how long an instance trusts its copy of an event's
// runs before it asks PostgreSQL whether the venue's best-first orders
// changed (Venues.SetSectionOrders): the longest an admin's change takes to
// reach every instance.
const bestOrderMaxAge = time.Second

// eventRunsCopy is an instance's copy of an event's runs: built from the
// venue's best-first orders of version, last found current at checked (on
// the store's clock).
type eventRunsCopy struct {
	runs    *bestLayout
	version int64
	checked time.Time
}

// eventRuns returns the event's seats for best available (seatRuns, with
// its venue's section orders). Once the seats are fixed they are read from
// PostgreSQL once and kept for the life of the process, as eventLabels
// does, but the orders are keyed by the venue's best_order_version: a copy
// older than bestOrderMaxAge is still returned at once, while a check in
// the background reads the version again and, when it changed, rebuilds
// the runs (and forgets the event's hints, whose run indexes then mean
// other runs, and raises best:gen:{e} so that the index in Redis, scored
// by those indexes, is built again). So fans never wait for that check, and while PostgreSQL
// does not answer it the copy is used as it is.
func (h *Holds) eventRuns(ctx context.Context, eventID int64) (*bestLayout, error) {
	h.mu.Lock()
	kept := h.runs[eventID]
	stale := kept != nil && h.Redis.Now().Sub(kept.checked) >= bestOrderMaxAge
	h.mu.Unlock()
	load := func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		defer cancel()
		return h.loadRuns(ctx, eventID, kept)
	}
	key := "runs:" + strconv.FormatInt(eventID, 10)
	if kept != nil {
		if stale {
			h.loads.DoChan(key, load)
		}
		return kept.runs, nil
	}
	v, err, _ := h.loads.Do(key, load)
	if err != nil {
		return nil, err
	}
	return v.(*bestLayout), nil
}

// loadRuns builds the event's runs from PostgreSQL, or, when kept is the
// copy of the current best_order_version, only marks it checked (also when
// the version cannot be read). The runs are kept once the seats are fixed.
func (h *Holds) loadRuns(ctx context.Context, eventID int64, kept *eventRunsCopy) (*bestLayout, error) {
	version, orders, err := h.bestOrders(ctx, eventID)
	if kept != nil && (err != nil || version == kept.version) {
		h.mu.Lock()
		kept.checked = h.Redis.Now()
		h.mu.Unlock()
		return kept.runs, nil
	} else if err != nil {
		return nil, err
	}
	seats, err := h.runSeats(ctx, eventID)
	if err != nil {
		return nil, err
	}
	runs := newBestLayout(seatRuns(seats, orders), func(grade string, quantity int) string {
		return h.bestIndexKey(eventID, grade, quantity)
	})
	fixed, err := h.seatsFixed(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if len(seats) > 0 && fixed {
		h.mu.Lock()
		h.runs[eventID] = &eventRunsCopy{runs: runs, version: version, checked: h.Redis.Now()}
		if kept != nil {
			for k := range h.hints {
				if k.event == eventID {
					delete(h.hints, k)
				}
			}
		}
		h.mu.Unlock()
		// The index's scores are the old order's ranks: a new generation
		// has it built again from this order (each instance raises it when
		// it takes the new order, so the last build is of the new order).
		if kept != nil {
			if err := h.Redis.Client.Incr(ctx, h.bestGenKey(eventID)).Err(); err != nil {
				return nil, fmt.Errorf("rebuild the best-available index of event %d: %w", eventID, err)
			}
		}
	}
	return runs, nil
}

// bestOrders reads, in one statement, the best_order_version of the
// event's venue and its sections' orders that are not the default
// (migrations/00016_section_order.sql), by section name.
func (h *Holds) bestOrders(ctx context.Context, eventID int64) (int64, map[string]boxoffice.SectionOrder, error) {
	rows, err := h.DB.Pool.Query(ctx, `
		SELECT v.best_order_version, o.section, coalesce(o.rank, 0), o.row_order, o.seat_order
		FROM event e JOIN venue v ON v.id = e.venue_id
		LEFT JOIN venue_section_order o ON o.venue_id = v.id
		WHERE e.id = $1`, eventID)
	if err != nil {
		return 0, nil, fmt.Errorf("section orders of event %d: %w", eventID, err)
	}
	var version int64
	orders := map[string]boxoffice.SectionOrder{}
	for rows.Next() {
		var section, rowOrder, seatOrder *string
		var rank int
		if err := rows.Scan(&version, &section, &rank, &rowOrder, &seatOrder); err != nil {
			return 0, nil, fmt.Errorf("section orders of event %d: %w", eventID, err)
		}
		if section != nil {
			orders[*section] = boxoffice.SectionOrder{Section: *section, Rank: rank,
				Rows: boxoffice.RowOrder(*rowOrder), Seats: boxoffice.SeatOrder(*seatOrder)}
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("section orders of event %d: %w", eventID, err)
	}
	return version, orders, nil
}

// runSeats reads the event's seats as seatRuns takes them.
func (h *Holds) runSeats(ctx context.Context, eventID int64) ([]runSeat, error) {
	rows, err := h.DB.Pool.Query(ctx, `
		SELECT label, section, row_label::int, number::int, grade, x, y
		FROM event_seat WHERE event_id = $1`, eventID)
	if err != nil {
		return nil, fmt.Errorf("seats of event %d: %w", eventID, err)
	}
	var seats []runSeat
	var s runSeat
	for rows.Next() {
		if err := rows.Scan(&s.label, &s.section, &s.row, &s.number, &s.grade, &s.x, &s.y); err != nil {
			return nil, fmt.Errorf("seats of event %d: %w", eventID, err)
		}
		seats = append(seats, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("seats of event %d: %w", eventID, err)
	}
	return seats, nil
}

// runSeat is a seat as seatRuns reads it.
type runSeat struct {
	label, section, grade string
	row, number           int
	x, y                  float64
}

// seatRuns cuts seats into runs (a section's row, one grade, consecutive
// numbers) and orders each grade's runs best first by the sections' orders
// (by section name; a section without one has the default order), in the
// geometry of the seat map: the stage is taken to be at the middle of the
// seats' width in front of the smallest y (the side the admin's seat map
// calls the stage's side), and a seat's distance is its distance from there.
//
//   - Sections of a lower Rank come first, then those without a rank.
//   - Within one rank, the sections whose rows go RowsFront are taken
//     together, a run before another when its seat nearest the stage is
//     nearer (the default, sections interleaved); a section whose rows go by
//     number is taken whole, row by row, and the groups follow one another
//     by their seat nearest the stage.
//   - In a section by number, the runs of one row follow the seat order:
//     the nearest the stage first (SeatsStage), the nearest the middle of
//     the row's numbers (SeatsMiddle), the lowest numbers (SeatsLow) or the
//     highest (SeatsHigh) first.
//   - A run's best seat, around which hold_best.lua picks its block, is the
//     seat nearest the stage, nearest the middle of the row's numbers (over
//     all the row's seats, of any grade), its lowest or its highest number.
//
// Ties go by the first label of the run.
func seatRuns(seats []runSeat, orders map[string]boxoffice.SectionOrder) gradeRuns {
	if len(seats) == 0 {
		return gradeRuns{}
	}
	minX, maxX, minY := math.Inf(1), math.Inf(-1), math.Inf(1)
	for _, s := range seats {
		minX, maxX, minY = min(minX, s.x), max(maxX, s.x), min(minY, s.y)
	}
	stageX := (minX + maxX) / 2
	dist := func(s runSeat) float64 { return math.Hypot(s.x-stageX, s.y-minY) }
	type rowKey struct {
		section string
		row     int
	}
	near := map[string]float64{}                 // section -> its seat nearest the stage
	lo, hi := map[rowKey]int{}, map[rowKey]int{} // a row's lowest and highest numbers
	for _, s := range seats {
		k := rowKey{s.section, s.row}
		if d, ok := near[s.section]; !ok || dist(s) < d {
			near[s.section] = dist(s)
		}
		if n, ok := lo[k]; !ok || s.number < n {
			lo[k] = s.number
		}
		hi[k] = max(hi[k], s.number)
	}
	// tier is a section's rank, ranked sections first.
	tier := func(section string) int {
		if r := orders[section].Rank; r > 0 {
			return r
		}
		return math.MaxInt
	}
	// A group of a tier: its front sections together (""), or one section by
	// number; groupNear is each group's seat nearest the stage.
	group := func(section string) string {
		if orders[section].RowOrder() == boxoffice.RowsFront {
			return ""
		}
		return section
	}
	type groupKey struct {
		tier  int
		group string
	}
	groupNear := map[groupKey]float64{}
	for sec, d := range near {
		k := groupKey{tier(sec), group(sec)}
		if g, ok := groupNear[k]; !ok || d < g {
			groupNear[k] = d
		}
	}

	slices.SortFunc(seats, func(a, b runSeat) int {
		return cmp.Or(cmp.Compare(a.grade, b.grade), cmp.Compare(a.section, b.section), cmp.Compare(a.row, b.row), cmp.Compare(a.number, b.number))
	})
	type ranked struct {
		run     seatRun
		group   groupKey
		row     int     // the row's place in its section by number (groups by number)
		inRow   float64 // the run's place in its row by the seat order (groups by number)
		nearest float64 // the distance of the run's seat nearest the stage
	}
	byGrade := map[string][]ranked{}
	for i := 0; i < len(seats); {
		j := i + 1
		for j < len(seats) && seats[j].grade == seats[i].grade && seats[j].section == seats[i].section &&
			seats[j].row == seats[i].row && seats[j].number == seats[j-1].number+1 {
			j++
		}
		first, last := seats[i], seats[j-1]
		o := orders[first.section]
		r := ranked{group: groupKey{tier(first.section), group(first.section)}, row: first.row, nearest: math.Inf(1)}
		if o.RowOrder() == boxoffice.RowsDescending {
			r.row = -first.row
		}
		for k := i; k < j; k++ {
			r.run.labels = append(r.run.labels, seats[k].label)
			if d := dist(seats[k]); d < r.nearest {
				r.run.best, r.nearest = k-i, d
			}
		}
		r.inRow = r.nearest
		switch o.SeatOrder() {
		case boxoffice.SeatsMiddle:
			k := rowKey{first.section, first.row}
			mid := float64(lo[k]+hi[k]) / 2
			r.run.best = min(max(int(math.Ceil(mid))-first.number, 0), j-i-1)
			r.inRow = math.Abs(float64(first.number+r.run.best) - mid)
		case boxoffice.SeatsLow:
			r.run.best, r.inRow = 0, float64(first.number)
		case boxoffice.SeatsHigh:
			r.run.best, r.inRow = j-i-1, float64(-last.number)
		}
		byGrade[first.grade] = append(byGrade[first.grade], r)
		i = j
	}
	out := gradeRuns{}
	for g, rs := range byGrade {
		slices.SortStableFunc(rs, func(a, b ranked) int {
			c := cmp.Or(cmp.Compare(a.group.tier, b.group.tier),
				cmp.Compare(groupNear[a.group], groupNear[b.group]), cmp.Compare(a.group.group, b.group.group))
			if c == 0 && a.group.group != "" {
				c = cmp.Or(cmp.Compare(a.row, b.row), cmp.Compare(a.inRow, b.inRow))
			}
			return cmp.Or(c, cmp.Compare(a.nearest, b.nearest), cmp.Compare(a.run.labels[0], b.run.labels[0]))
		})
		for _, r := range rs {
			out[g] = append(out[g], r.run)
		}
	}
	return out
}
