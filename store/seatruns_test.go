package store

import (
	"fmt"
	"slices"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// block lays out a section of rows × seats of grade R, its seat 1 at x and
// row 1 at y 0 (the stage's side), SeatPitch and RowPitch apart; skip names
// seat numbers left out (an aisle).
func block(section string, rows, seats int, x float64, skip ...int) []runSeat {
	var out []runSeat
	for r := 1; r <= rows; r++ {
		for n := 1; n <= seats; n++ {
			if slices.Contains(skip, n) {
				continue
			}
			out = append(out, runSeat{
				label: fmt.Sprintf("%s-%d-%d", section, r, n), section: section, grade: "R", row: r, number: n,
				x: x + float64((n-1)*boxoffice.SeatPitch), y: float64((r - 1) * boxoffice.RowPitch),
			})
		}
	}
	return out
}

// twoSections is sections A and B of 3 rows of 6 seats side by side, the
// stage in front of the gap between them.
func twoSections() []runSeat {
	return append(block("A", 3, 6, 0), block("B", 3, 6, 6*boxoffice.SeatPitch+boxoffice.SectionGap)...)
}

// runFirsts returns each run's first label and its best seat's label.
func runFirsts(runs []seatRun) (firsts, bests []string) {
	for _, r := range runs {
		firsts, bests = append(firsts, r.labels[0]), append(bests, r.labels[r.best])
	}
	return firsts, bests
}

func orders(os ...boxoffice.SectionOrder) map[string]boxoffice.SectionOrder {
	m := map[string]boxoffice.SectionOrder{}
	for _, o := range os {
		m[o.Section] = o
	}
	return m
}

func TestSeatRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		seats  []runSeat
		orders map[string]boxoffice.SectionOrder
		firsts []string // each run's first seat, best run first
		bests  []string // each run's best seat
	}{{
		// Nearest the stage first, the sections' rows interleaved; in a
		// row the seat nearest the stage, at the gap between the sections.
		name:   "Default",
		seats:  twoSections(),
		firsts: []string{"A-1-1", "B-1-1", "A-2-1", "B-2-1", "A-3-1", "B-3-1"},
		bests:  []string{"A-1-6", "B-1-1", "A-2-6", "B-2-1", "A-3-6", "B-3-1"},
	}, {
		name:   "DefaultSpelledOut",
		seats:  twoSections(),
		orders: orders(boxoffice.SectionOrder{Section: "A", Rows: boxoffice.RowsFront, Seats: boxoffice.SeatsStage}),
		firsts: []string{"A-1-1", "B-1-1", "A-2-1", "B-2-1", "A-3-1", "B-3-1"},
		bests:  []string{"A-1-6", "B-1-1", "A-2-6", "B-2-1", "A-3-6", "B-3-1"},
	}, {
		name:   "Rank",
		seats:  twoSections(),
		orders: orders(boxoffice.SectionOrder{Section: "B", Rank: 1}),
		firsts: []string{"B-1-1", "B-2-1", "B-3-1", "A-1-1", "A-2-1", "A-3-1"},
		bests:  []string{"B-1-1", "B-2-1", "B-3-1", "A-1-6", "A-2-6", "A-3-6"},
	}, {
		name:   "Ranks",
		seats:  twoSections(),
		orders: orders(boxoffice.SectionOrder{Section: "A", Rank: 2}, boxoffice.SectionOrder{Section: "B", Rank: 1}),
		firsts: []string{"B-1-1", "B-2-1", "B-3-1", "A-1-1", "A-2-1", "A-3-1"},
		bests:  []string{"B-1-1", "B-2-1", "B-3-1", "A-1-6", "A-2-6", "A-3-6"},
	}, {
		name:   "SameRankTogether",
		seats:  twoSections(),
		orders: orders(boxoffice.SectionOrder{Section: "A", Rank: 1}, boxoffice.SectionOrder{Section: "B", Rank: 1}),
		firsts: []string{"A-1-1", "B-1-1", "A-2-1", "B-2-1", "A-3-1", "B-3-1"},
		bests:  []string{"A-1-6", "B-1-1", "A-2-6", "B-2-1", "A-3-6", "B-3-1"},
	}, {
		name:   "RowsDescending",
		seats:  block("A", 3, 6, 0),
		orders: orders(boxoffice.SectionOrder{Section: "A", Rows: boxoffice.RowsDescending}),
		firsts: []string{"A-3-1", "A-2-1", "A-1-1"},
		bests:  []string{"A-3-3", "A-2-3", "A-1-3"},
	}, {
		// Rows by number: B is taken whole, after the front sections'
		// runs, whose seat nearest the stage is as near (a tie goes to
		// the front sections).
		name:   "RowsAscendingWholeSection",
		seats:  twoSections(),
		orders: orders(boxoffice.SectionOrder{Section: "B", Rows: boxoffice.RowsAscending}),
		firsts: []string{"A-1-1", "A-2-1", "A-3-1", "B-1-1", "B-2-1", "B-3-1"},
		bests:  []string{"A-1-6", "A-2-6", "A-3-6", "B-1-1", "B-2-1", "B-3-1"},
	}, {
		// The stage at the smallest y makes row 3 the back row; row numbers
		// counted from the back (ascending) put it first anyway.
		name:   "RowsAscendingAgainstGeometry",
		seats:  flipRows(block("A", 3, 6, 0)),
		orders: orders(boxoffice.SectionOrder{Section: "A", Rows: boxoffice.RowsAscending}),
		firsts: []string{"A-1-1", "A-2-1", "A-3-1"},
		bests:  []string{"A-1-3", "A-2-3", "A-3-3"},
	}, {
		name:   "SeatsLow",
		seats:  twoSections(),
		orders: orders(boxoffice.SectionOrder{Section: "A", Seats: boxoffice.SeatsLow}),
		firsts: []string{"A-1-1", "B-1-1", "A-2-1", "B-2-1", "A-3-1", "B-3-1"},
		bests:  []string{"A-1-1", "B-1-1", "A-2-1", "B-2-1", "A-3-1", "B-3-1"},
	}, {
		name:   "SeatsHigh",
		seats:  twoSections(),
		orders: orders(boxoffice.SectionOrder{Section: "B", Seats: boxoffice.SeatsHigh}),
		firsts: []string{"A-1-1", "B-1-1", "A-2-1", "B-2-1", "A-3-1", "B-3-1"},
		bests:  []string{"A-1-6", "B-1-6", "A-2-6", "B-2-6", "A-3-6", "B-3-6"},
	}, {
		// The middle of numbers 1 to 6 is between 3 and 4: the best seat is
		// 4, so that a pair is 3 and 4.
		name:   "SeatsMiddle",
		seats:  twoSections(),
		orders: orders(boxoffice.SectionOrder{Section: "A", Seats: boxoffice.SeatsMiddle}),
		firsts: []string{"A-1-1", "B-1-1", "A-2-1", "B-2-1", "A-3-1", "B-3-1"},
		bests:  []string{"A-1-4", "B-1-1", "A-2-4", "B-2-1", "A-3-4", "B-3-1"},
	}, {
		// A row cut by an aisle (seat 4 missing) is two runs; in a section
		// by number they follow the seat order.
		name:   "SeatsHighAcrossAnAisle",
		seats:  block("A", 2, 7, 0, 4),
		orders: orders(boxoffice.SectionOrder{Section: "A", Rows: boxoffice.RowsAscending, Seats: boxoffice.SeatsHigh}),
		firsts: []string{"A-1-5", "A-1-1", "A-2-5", "A-2-1"},
		bests:  []string{"A-1-7", "A-1-3", "A-2-7", "A-2-3"},
	}, {
		name:   "SeatsLowAcrossAnAisle",
		seats:  block("A", 2, 7, 0, 4),
		orders: orders(boxoffice.SectionOrder{Section: "A", Rows: boxoffice.RowsDescending, Seats: boxoffice.SeatsLow}),
		firsts: []string{"A-2-1", "A-2-5", "A-1-1", "A-1-5"},
		bests:  []string{"A-2-1", "A-2-5", "A-1-1", "A-1-5"},
	}, {
		// The middle of the row (4, the aisle) is as near to both runs'
		// inner ends: the tie goes by label.
		name:   "SeatsMiddleAcrossAnAisle",
		seats:  block("A", 1, 7, 0, 4),
		orders: orders(boxoffice.SectionOrder{Section: "A", Rows: boxoffice.RowsAscending, Seats: boxoffice.SeatsMiddle}),
		firsts: []string{"A-1-1", "A-1-5"},
		bests:  []string{"A-1-3", "A-1-5"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			runs := seatRuns(tc.seats, tc.orders)["R"]
			firsts, bests := runFirsts(runs)
			if !slices.Equal(firsts, tc.firsts) || !slices.Equal(bests, tc.bests) {
				t.Errorf("runs from %v, best seats %v;\nwant from %v, best seats %v", firsts, bests, tc.firsts, tc.bests)
			}
		})
	}
}

// flipRows puts row 1 at the back (the largest y).
func flipRows(seats []runSeat) []runSeat {
	for i := range seats {
		seats[i].y = float64((3 - seats[i].row) * boxoffice.RowPitch)
	}
	return seats
}
