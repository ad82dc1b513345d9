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

// bestWindowSeats is about how many seats one run of hold_best.lua
// considers (whole runs, at least one): the script's cost is bounded by it,
// however large the venue.
const bestWindowSeats = 64

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
}

// gradeRuns is an event's seats for best available: each grade's runs, best
// first.
type gradeRuns map[string][]seatRun

// bestHint says that, when it was learned (on the store's clock), the runs
// of a grade before run had no block of a number of free seats (of the kind
// its key says), or, with none, that no run had one, and then how many
// seats were free (left) and whether a block that strands a seat was.
type bestHint struct {
	run     int
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
// One run of the script considers about bestWindowSeats seats, from where
// this process last found the grade's blocks of that size to begin (a hint
// per pass, kept for bestHintMaxAge), so that a pick costs one round trip
// and touches only those rows in the common case; when they hold no block
// it goes on through the grade's other runs, a window per round trip.
//
// Errors (*boxoffice.Error): ENOENTRYTOKEN; EBADCHOICE for a grade with no
// seats in the event, a quantity under 1 or above req.Limit (before Redis is
// touched), or above what the account may still hold (Details["left"]);
// ENOTTOGETHER when no run of the grade has quantity free seats together,
// with Details["left"] the grade's free seats the search saw. Input and
// the sold-seat cache as Hold.
func (h *Holds) HoldBest(ctx context.Context, req boxoffice.HoldRequest, grade string, quantity int) (boxoffice.HoldResult, error) {
	if req.Limit < 1 || req.TTL < time.Millisecond {
		return boxoffice.HoldResult{}, fmt.Errorf("hold best seats: limit %d and TTL %v must be positive", req.Limit, req.TTL)
	}
	if quantity < 1 || quantity > req.Limit {
		err := boxoffice.NewError(boxoffice.EBADCHOICE, "best_quantity_range", "Max", req.Limit)
		h.refuse(err)
		return boxoffice.HoldResult{}, err
	}
	layout, err := h.eventRuns(ctx, req.EventID)
	if err != nil {
		return boxoffice.HoldResult{}, err
	}
	runs, ok := layout[grade]
	if !ok {
		err := boxoffice.NewError(boxoffice.EBADCHOICE, "best_unknown_grade")
		h.refuse(err)
		return boxoffice.HoldResult{}, err
	}
	var pass bestPass
	for _, strand := range []bool{false, true} {
		pass = h.bestPass(ctx, req, quantity, runs, bestHintKey{req.EventID, grade, quantity, strand})
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
		return boxoffice.HoldResult{
			Held:      stringsOf(pass.res[5]),
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

// bestPass runs hold_best.lua over the grade's runs, a window at a time,
// from the hint of k (whether blocks that strand a seat may be taken), until
// one holds seats or every run was seen, and keeps the hint up to date. A
// fresh hint that no run has a block cuts the pass to its first window
// (which still checks the entry, and takes a block freed since), and the
// hint then says what the pass would have found.
func (h *Holds) bestPass(ctx context.Context, req boxoffice.HoldRequest, quantity int, runs []seatRun, k bestHintKey) bestPass {
	var p bestPass
	hint := h.bestHintFor(k)
	start := hint.run
	// The runs from the hint on, then those before it.
	order := make([]int, 0, len(runs))
	for i := range runs {
		order = append(order, (start+i)%len(runs))
	}
	for w := 0; w < len(order); {
		end := w
		for n := 0; end < len(order) && (end == w || n+len(runs[order[end]].labels) <= bestWindowSeats); end++ {
			n += len(runs[order[end]].labels)
		}
		res, err := h.holdBestWindow(ctx, req, quantity, k.strand, runs, order[w:end])
		if err != nil {
			p.err = err
			return p
		}
		if p.mine, err = mineState(res[1], res[2], res[3]); err != nil {
			p.err = fmt.Errorf("hold best seats of event %d: %w", req.EventID, err)
			return p
		}
		switch res[0] {
		case "limit":
			p.err = &boxoffice.Error{
				Code:    boxoffice.EBADCHOICE,
				Msg:     boxoffice.M("best_quantity_left", "Count", p.mine.Left(req.Limit)),
				Details: map[string]any{"left": p.mine.Left(req.Limit)},
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
			h.setBestHint(k, bestHint{run: order[w+at]})
			p.res = res
			return p
		}
		// No run of the window has a block that may be taken ('none').
		if hint.none {
			p.left, p.strands = hint.left, hint.strands
			return p
		}
		p.left += int(toInt64(res[4]))
		p.strands = p.strands || toInt64(res[5]) == 1
		h.setBestHint(k, bestHint{run: (order[end-1] + 1) % len(runs)})
		w = end
	}
	h.setBestHint(k, bestHint{run: start, none: true, left: p.left, strands: p.strands})
	return p
}

// holdBestWindow runs hold_best.lua once over the runs of the given
// indexes, in that order, taking a block that strands a seat only if
// strand, and returns its reply (see runHoldScript).
func (h *Holds) holdBestWindow(ctx context.Context, req boxoffice.HoldRequest, quantity int, strand bool, runs []seatRun, window []int) ([]any, error) {
	keys, args := h.shopperKeys(req), shopperArgs(req)
	mayStrand := "0"
	if strand {
		mayStrand = "1"
	}
	args = append(args, quantity, mayStrand, len(window))
	for _, i := range window {
		args = append(args, len(runs[i].labels), runs[i].best+1)
	}
	for _, i := range window {
		for _, l := range runs[i].labels {
			keys = append(keys, h.lockKey(req.EventID, l))
			args = append(args, l)
		}
	}
	return h.runHoldScript(ctx, holdBestScript, req.EventID, keys, args)
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

// eventRuns returns the event's seats for best available, read from
// PostgreSQL on first use and kept for the life of the process once the
// seats are fixed, as eventLabels does.
func (h *Holds) eventRuns(ctx context.Context, eventID int64) (gradeRuns, error) {
	h.mu.Lock()
	runs, ok := h.runs[eventID]
	h.mu.Unlock()
	if ok {
		return runs, nil
	}
	v, err, _ := h.loads.Do("runs:"+strconv.FormatInt(eventID, 10), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		defer cancel()
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
		runs := seatRuns(seats)
		fixed, err := h.seatsFixed(ctx, eventID)
		if err != nil {
			return nil, err
		}
		if len(seats) > 0 && fixed {
			h.mu.Lock()
			h.runs[eventID] = runs
			h.mu.Unlock()
		}
		return runs, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(gradeRuns), nil
}

// runSeat is a seat as seatRuns reads it.
type runSeat struct {
	label, section, grade string
	row, number           int
	x, y                  float64
}

// seatRuns cuts seats into runs (a section's row, one grade, consecutive
// numbers) and orders each grade's runs nearest the stage first: by the
// distance of their seat nearest the stage, which is taken to be at the
// middle of the seats' width in front of the smallest y (the side the
// admin's seat map calls the stage's side), then by label.
func seatRuns(seats []runSeat) gradeRuns {
	if len(seats) == 0 {
		return gradeRuns{}
	}
	minX, maxX, minY := math.Inf(1), math.Inf(-1), math.Inf(1)
	for _, s := range seats {
		minX, maxX, minY = min(minX, s.x), max(maxX, s.x), min(minY, s.y)
	}
	stageX := (minX + maxX) / 2
	dist := func(s runSeat) float64 { return math.Hypot(s.x-stageX, s.y-minY) }
	slices.SortFunc(seats, func(a, b runSeat) int {
		return cmp.Or(cmp.Compare(a.grade, b.grade), cmp.Compare(a.section, b.section), cmp.Compare(a.row, b.row), cmp.Compare(a.number, b.number))
	})
	type ranked struct {
		run  seatRun
		dist float64
	}
	byGrade := map[string][]ranked{}
	for i := 0; i < len(seats); {
		j := i + 1
		for j < len(seats) && seats[j].grade == seats[i].grade && seats[j].section == seats[i].section &&
			seats[j].row == seats[i].row && seats[j].number == seats[j-1].number+1 {
			j++
		}
		r := ranked{dist: math.Inf(1)}
		for k := i; k < j; k++ {
			r.run.labels = append(r.run.labels, seats[k].label)
			if d := dist(seats[k]); d < r.dist {
				r.run.best, r.dist = k-i, d
			}
		}
		byGrade[seats[i].grade] = append(byGrade[seats[i].grade], r)
		i = j
	}
	out := gradeRuns{}
	for g, rs := range byGrade {
		slices.SortStableFunc(rs, func(a, b ranked) int {
			return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.run.labels[0], b.run.labels[0]))
		})
		for _, r := range rs {
			out[g] = append(out[g], r.run)
		}
	}
	return out
}
