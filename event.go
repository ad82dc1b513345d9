package boxoffice

import (
	"context"
	"time"
)

// Event statuses.
const (
	EventDraft  = "draft"
	EventOnSale = "on_sale"
	EventClosed = "closed"
)

// Defaults of a new event.
const (
	DefaultTimeZone      = "Asia/Seoul"
	DefaultCurrency      = "KRW"
	DefaultMaxPerAccount = 5
	DefaultHoldTTL       = 300 * time.Second
	DefaultTokenTTL      = 600 * time.Second
	DefaultAdmissionRate = 100 // fans per second
)

// Event is one sale of an event's seats. Times are instants (stored in UTC) and
// shown in TimeZone, an IANA zone name. Prices are in the minor unit of
// Currency (an ISO 4217 code; KRW has none).
type Event struct {
	ID            int64
	VenueID       int64
	VenueName     string
	Title         string
	Description   string
	TimeZone      string
	StartsAt      time.Time
	QueueOpensAt  time.Time
	SaleEndsAt    time.Time
	Currency      string
	MaxPerAccount int           // tickets one account may hold plus own, all grades together
	HoldTTL       time.Duration // how long a seat hold lasts, whole seconds
	TokenTTL      time.Duration // how long an entry token lasts, whole seconds
	AdmissionRate int           // fans admitted per second
	MaxAdmitted   int           // cap on live entry tokens; 0 means no cap
	Paused        bool          // admission paused by an admin
	Status        string
	Grades        []Grade
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Grade is a price class of an event's seats, such as "R" or "VIP". Price is
// in the minor unit of the event's currency. SeatsTotal and SeatsLeft are
// filled by queries that count them (SeatsLeft = total minus sold).
type Grade struct {
	Code       string
	Name       string
	Price      int64
	Color      string // CSS colour, "#rrggbb"
	SeatsTotal int
	SeatsLeft  int
}

// Location returns the event's time zone, or UTC if its name is unknown.
func (e *Event) Location() *time.Location {
	if loc, err := time.LoadLocation(e.TimeZone); err == nil {
		return loc
	}
	return time.UTC
}

// QueueOpen reports whether fans may join the queue at now: the event is on
// sale, the queue has opened and the sale has not ended.
func (e *Event) QueueOpen(now time.Time) bool {
	return e.Status == EventOnSale && !now.Before(e.QueueOpensAt) && now.Before(e.SaleEndsAt)
}

// Grade returns the event's grade with the given code, or nil.
func (e *Event) Grade(code string) *Grade {
	for i := range e.Grades {
		if e.Grades[i].Code == code {
			return &e.Grades[i]
		}
	}
	return nil
}

// EventFilter narrows FindEvents. A zero filter lists every event.
type EventFilter struct {
	Statuses []string // only these statuses, if any
	Upcoming bool     // only events whose sale has not ended
}

// EventService stores events, their grades and their seats.
type EventService interface {
	// FindEventByID returns the event with its grades (with seat counts).
	// Errors: ENOTFOUND.
	FindEventByID(ctx context.Context, id int64) (*Event, error)
	// FindEvents lists events by queue opening.
	FindEvents(ctx context.Context, f EventFilter) ([]*Event, error)
	// EventSeats returns the event's seats with their grade's price, ordered
	// by section, row and number. Errors: ENOTFOUND.
	EventSeats(ctx context.Context, eventID int64) ([]Seat, error)
}
