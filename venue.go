package boxoffice

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxVenueNameLen is the longest venue name, in characters.
const MaxVenueNameLen = 200

// Venue is a hall with a fixed seat map. Events copy its seats when they are
// created, so that editing a venue never changes an event's seats.
type Venue struct {
	ID        int64
	Name      string
	Seats     int // number of seats in the map
	Events    int // number of events on this venue; while above 0 it cannot be deleted
	CreatedAt time.Time
}

// NormalizeVenueName trims a venue name.
func NormalizeVenueName(name string) string { return strings.TrimSpace(name) }

// ValidateVenueName returns an EINVALID error with Fields["name"] for an
// empty name or one over MaxVenueNameLen characters, or nil. Normalize first.
func ValidateVenueName(name string) error {
	if n := utf8.RuneCountInString(name); n == 0 || n > MaxVenueNameLen {
		return Invalid(map[string]Msg{"name": M("val_venue_name", "Max", MaxVenueNameLen)})
	}
	return nil
}

// Seat is one seat of a venue's or an event's map. Label is
// "section-row-number" and unique within its map; Row and Number are strings
// of digits starting at 1; Grade is a grade code such as "R"; X and Y are in
// layout units (seat pitch 12, row pitch 14), Y growing away from the stage.
type Seat struct {
	Label   string
	Section string
	Row     string
	Number  string
	Grade   string
	X, Y    float64
	HasXY   bool // whether X and Y came from the source rather than a default layout
	Price   int64
	EventID int64
}

// SeatLabel returns the label "section-row-number" of a seat.
func SeatLabel(section, row, number string) string {
	return section + "-" + row + "-" + number
}

// ValidateVenue checks a new venue: ValidateVenueName's Fields["name"] and
// ValidateSeats' Details["problems"] together in one EINVALID error, or nil.
// Normalize the name first.
func ValidateVenue(name string, seats []Seat) error {
	nameErr, _ := ValidateVenueName(name).(*Error)
	seatsErr, _ := ValidateSeats(seats).(*Error)
	switch {
	case nameErr == nil:
		if seatsErr == nil {
			return nil
		}
		return seatsErr
	case seatsErr != nil:
		nameErr.Details = seatsErr.Details
		nameErr.Msg = seatsErr.Msg
	}
	return nameErr
}

// VenueService stores venues and their seat maps.
type VenueService interface {
	// CreateVenue stores a venue with its seats, all or nothing. Errors:
	// EINVALID with Fields["name"] (empty or overlong name) and/or
	// Details["problems"] (see ValidateSeats: bad fields, duplicate labels,
	// no seats, too many).
	CreateVenue(ctx context.Context, name string, seats []Seat) (*Venue, error)
	// ImportVenue is CreateVenue with the sections' best-first orders
	// (SectionOrderService), stored with the seats, all or nothing. Errors
	// as CreateVenue, and EINVALID as ValidateSectionOrders.
	ImportVenue(ctx context.Context, name string, seats []Seat, orders []SectionOrder) (*Venue, error)
	// FindVenues lists venues by name, with their seat and event counts.
	FindVenues(ctx context.Context) ([]*Venue, error)
	// FindVenueByID returns a venue. Errors: ENOTFOUND.
	FindVenueByID(ctx context.Context, id int64) (*Venue, error)
	// VenueSeats returns a venue's seats ordered by section, row and number.
	// Errors: ENOTFOUND.
	VenueSeats(ctx context.Context, venueID int64) ([]Seat, error)
	// RenameVenue changes a venue's name (its events show the new one).
	// Errors: ENOTFOUND; EINVALID with Fields["name"].
	RenameVenue(ctx context.Context, id int64, name string) (*Venue, error)
	// DeleteVenue deletes a venue and its seat map. Errors: ENOTFOUND;
	// ECONFLICT while an event uses it.
	DeleteVenue(ctx context.Context, id int64) error
	SectionOrderService
}
