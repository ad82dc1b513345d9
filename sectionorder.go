package boxoffice

import (
	"context"
	"fmt"
	"strconv"
)

// RowOrder is the order in which best available takes the rows of a
// section (SectionOrder.Rows).
type RowOrder string

// Row orders. The empty RowOrder is RowsFront.
const (
	RowsFront      RowOrder = "front"      // the row nearest the stage first, by the seats' x,y (the default)
	RowsAscending  RowOrder = "ascending"  // by row number, row 1 first
	RowsDescending RowOrder = "descending" // by row number, the highest first
)

// RowOrders lists the row orders, the default first.
var RowOrders = []RowOrder{RowsFront, RowsAscending, RowsDescending}

// SeatOrder is where in a row best available starts (SectionOrder.Seats).
type SeatOrder string

// Seat orders. The empty SeatOrder is SeatsStage.
const (
	SeatsStage  SeatOrder = "stage"  // the seat nearest the stage first, by the seats' x,y (the default)
	SeatsMiddle SeatOrder = "middle" // from the middle of the row's numbers outwards
	SeatsLow    SeatOrder = "low"    // from the lowest number up
	SeatsHigh   SeatOrder = "high"   // from the highest number down
)

// SeatOrders lists the seat orders, the default first.
var SeatOrders = []SeatOrder{SeatsStage, SeatsMiddle, SeatsLow, SeatsHigh}

// MaxSectionRank is the highest rank a section may have (SectionOrder.Rank).
const MaxSectionRank = 999

// SectionOrder is a section's best-first order for best available: which
// sections come first (Rank), and in a section which rows (Rows) and where in
// a row (Seats). The zero value (besides Section) is the default, the
// venue's geometry: nearest the stage first.
type SectionOrder struct {
	Section string
	// Rank, 1 to MaxSectionRank, puts the section ahead of sections of a
	// higher rank and of every section without one (0); sections of one rank
	// are taken together, nearest the stage first.
	Rank  int
	Rows  RowOrder
	Seats SeatOrder
}

// IsDefault reports whether o asks for nothing but the default order.
func (o SectionOrder) IsDefault() bool {
	return o.Rank == 0 && o.RowOrder() == RowsFront && o.SeatOrder() == SeatsStage
}

// RowOrder returns o.Rows, RowsFront when empty.
func (o SectionOrder) RowOrder() RowOrder {
	if o.Rows == "" {
		return RowsFront
	}
	return o.Rows
}

// SeatOrder returns o.Seats, SeatsStage when empty.
func (o SectionOrder) SeatOrder() SeatOrder {
	if o.Seats == "" {
		return SeatsStage
	}
	return o.Seats
}

// SectionOrderText is a section's order as typed (an admin's form or an
// importer's columns): Rank empty for none, Rows and Seats empty for the
// default.
type SectionOrderText struct {
	Section, Rank, Rows, Seats string
}

// ParseSectionOrder reads a section's order as typed. It returns the order
// and, for each field that is wrong ("rank": not a whole number from 1 to
// MaxSectionRank; "row_order": not one of RowOrders; "seat_order": not one of
// SeatOrders), the reason, naming the section; nil when all are right.
func ParseSectionOrder(t SectionOrderText) (SectionOrder, map[string]Msg) {
	o := SectionOrder{Section: t.Section, Rows: RowOrder(t.Rows), Seats: SeatOrder(t.Seats)}
	bad := map[string]Msg{}
	if t.Rank != "" {
		n, err := strconv.Atoi(t.Rank)
		if err != nil || n < 1 || n > MaxSectionRank || strconv.Itoa(n) != t.Rank {
			bad["rank"] = M("val_section_rank", "Section", ClipInput(t.Section, MaxQuoted), "Max", MaxSectionRank, "Value", ClipInput(t.Rank, MaxQuoted))
		} else {
			o.Rank = n
		}
	}
	if t.Rows != "" && !validRowOrder(o.Rows) {
		bad["row_order"] = M("val_row_order", "Section", ClipInput(t.Section, MaxQuoted), "Value", ClipInput(t.Rows, MaxQuoted))
	}
	if t.Seats != "" && !validSeatOrder(o.Seats) {
		bad["seat_order"] = M("val_seat_order", "Section", ClipInput(t.Section, MaxQuoted), "Value", ClipInput(t.Seats, MaxQuoted))
	}
	if len(bad) == 0 {
		return o, nil
	}
	return o, bad
}

func validRowOrder(r RowOrder) bool {
	for _, v := range RowOrders {
		if r == v {
			return true
		}
	}
	return false
}

func validSeatOrder(s SeatOrder) bool {
	for _, v := range SeatOrders {
		if s == v {
			return true
		}
	}
	return false
}

// ValidateSectionOrders checks orders against the sections of a venue's
// seat map: nil, or one EINVALID error whose Fields, keyed
// "sections[i].rank", "sections[i].row_order" and "sections[i].seat_order"
// (i the order's index in orders, from 0), name every reason at once: a
// section the map does not have, one named twice, a rank, row order or seat
// order out of range.
func ValidateSectionOrders(orders []SectionOrder, sections map[string]bool) error {
	fields := map[string]Msg{}
	seen := map[string]bool{}
	for i, o := range orders {
		key := func(f string) string { return fmt.Sprintf("sections[%d].%s", i, f) }
		switch {
		case !sections[o.Section]:
			fields[key("rank")] = M("val_section_unknown", "Section", ClipInput(o.Section, MaxQuoted))
		case seen[o.Section]:
			fields[key("rank")] = M("val_section_twice", "Section", o.Section)
		case o.Rank < 0 || o.Rank > MaxSectionRank:
			fields[key("rank")] = M("val_section_rank", "Section", o.Section, "Max", MaxSectionRank, "Value", strconv.Itoa(o.Rank))
		}
		seen[o.Section] = true
		if !validRowOrder(o.RowOrder()) {
			fields[key("row_order")] = M("val_row_order", "Section", o.Section, "Value", ClipInput(string(o.Rows), MaxQuoted))
		}
		if !validSeatOrder(o.SeatOrder()) {
			fields[key("seat_order")] = M("val_seat_order", "Section", o.Section, "Value", ClipInput(string(o.Seats), MaxQuoted))
		}
	}
	return Invalid(fields)
}

// SectionOrderService stores venues' best-first orders.
type SectionOrderService interface {
	// SectionOrders returns the order of every section of a venue's seat
	// map, by section name; sections never set have the default (zero)
	// order. Errors: ENOTFOUND.
	SectionOrders(ctx context.Context, venueID int64) ([]SectionOrder, error)
	// SetSectionOrders sets the orders of the named sections of a venue
	// (the others keep theirs). It reaches the best available of every
	// event of the venue, those on sale included. Errors: ENOTFOUND;
	// EINVALID as ValidateSectionOrders, and nothing changed.
	SetSectionOrders(ctx context.Context, venueID int64, orders []SectionOrder) error
}
