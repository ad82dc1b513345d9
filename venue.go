package boxoffice

import (
	"context"
	"time"
)

// Venue is a hall with a fixed seat map. Events copy its seats when they are
// created, so that editing a venue never changes an event's seats.
type Venue struct {
	ID        int64
	Name      string
	Seats     int // number of seats in the map
	CreatedAt time.Time
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

// VenueService stores venues and their seat maps.
type VenueService interface {
	// CreateVenue stores a venue with its seats, all or nothing.
	// Errors: EINVALID (empty or overlong name, no seats, duplicate labels).
	CreateVenue(ctx context.Context, name string, seats []Seat) (*Venue, error)
	// FindVenues lists venues by name.
	FindVenues(ctx context.Context) ([]*Venue, error)
	// FindVenueByID returns a venue. Errors: ENOTFOUND.
	FindVenueByID(ctx context.Context, id int64) (*Venue, error)
	// VenueSeats returns a venue's seats ordered by section, row and number.
	// Errors: ENOTFOUND.
	VenueSeats(ctx context.Context, venueID int64) ([]Seat, error)
}
