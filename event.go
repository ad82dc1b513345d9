package boxoffice

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"golang.org/x/text/currency"
)

// Event statuses.
const (
	EventDraft  = "draft"
	EventOnSale = "on_sale"
	EventClosed = "closed"
)

// Statuses fans see of an event on sale whose seats are gone (SeatStatus):
// EventSoldOut when every seat is sold or blocked, EventAllTaken while the
// only seats not sold nor blocked are held or in unpaid orders, which may
// come back when their holds or orders expire.
const (
	EventSoldOut  = "sold_out"
	EventAllTaken = "all_taken"
)

// Defaults of a new event.
const (
	DefaultTimeZone      = "Asia/Seoul"
	DefaultCurrency      = "KRW"
	DefaultMaxPerAccount = 5
	DefaultHoldTTL       = 300 * time.Second
	DefaultTokenTTL      = 600 * time.Second
	DefaultAdmissionRate = 100 // fans per second
	DefaultGradeColor    = "#888888"
)

// Limits of an event's fields; the schema (migrations/00002) holds the same.
const (
	MaxTitleLen        = 200               // characters
	MaxDescriptionLen  = 5000              // characters
	MaxGradeNameLen    = 60                // characters
	MaxGrades          = 20                // grades of one event
	MaxPrice           = 1_000_000_000_000 // minor currency units
	MaxPerAccountLimit = 20
	MaxHoldTTL         = time.Hour
	MaxTokenTTL        = 2 * time.Hour
	MaxAdmissionRate   = 100000 // fans per second
	// MaxPowDifficulty caps an event's PowDifficulty: 10 million hashes,
	// some seconds in a phone's browser.
	MaxPowDifficulty = 10000000
)

// Event is one sale of an event's seats. Times are instants (stored in UTC) and
// shown in TimeZone, an IANA zone name. Prices are in the minor unit of
// Currency (an ISO 4217 code; KRW has none).
type Event struct {
	ID           int64
	VenueID      int64
	VenueName    string
	Title        Text // per language; at least one
	Description  Text // per language; may be empty
	TimeZone     string
	StartsAt     time.Time
	QueueOpensAt time.Time
	SaleEndsAt   time.Time
	// PrequeueOpensAt is when the pre-queue opens (before QueueOpensAt,
	// which is the draw's time); zero for none.
	PrequeueOpensAt time.Time
	Currency        string
	MaxPerAccount   int           // tickets one account may hold plus own, all grades together
	HoldTTL         time.Duration // how long a seat hold lasts, whole seconds
	TokenTTL        time.Duration // how long an entry token lasts, whole seconds
	AdmissionRate   int           // fans admitted per second
	MaxShoppers     int           // shoppers at once (live entry tokens); 0 means no cap
	// PowDifficulty is the proof of work a join needs: the ALTCHA
	// challenge's maxnumber (numbers a client tries, half on average), 0
	// for none.
	PowDifficulty int
	Paused        bool // admission paused by an admin
	Status        string
	Grades        []Grade
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Grade is a price class of an event's seats, such as "R" or "VIP". Price is
// in the minor unit of the event's currency. SeatsTotal, SeatsLeft and
// SeatsHeld are filled by queries that count them: SeatsHeld are the seats
// held in Redis without an order yet (a live hold) or in unpaid
// (PENDING_PAYMENT) orders, SeatsLeft the seats neither sold, blocked nor
// held so; blocked seats count in neither.
type Grade struct {
	Code       string
	Name       Text // per language, such as {"ko": "R석", "en": "R seat"}
	Price      int64
	Color      string // CSS colour, "#rrggbb"
	SeatsTotal int
	SeatsLeft  int
	SeatsHeld  int
}

// Location returns the event's time zone, or UTC if its name is unknown.
func (e *Event) Location() *time.Location {
	if loc, err := time.LoadLocation(e.TimeZone); err == nil {
		return loc
	}
	return time.UTC
}

// SeatStatus returns the status fans see: EventSoldOut when the event is on
// sale and no seat of its grades is free or held (SeatsLeft and SeatsHeld
// all 0), EventAllTaken when none is free but some are held, else Status.
// An event read without its grades (nil Grades) keeps its Status.
func (e *Event) SeatStatus() string {
	if e.Status != EventOnSale || len(e.Grades) == 0 {
		return e.Status
	}
	left, held := 0, 0
	for _, g := range e.Grades {
		left, held = left+g.SeatsLeft, held+g.SeatsHeld
	}
	switch {
	case left > 0:
		return e.Status
	case held > 0:
		return EventAllTaken
	}
	return EventSoldOut
}

// QueueOpen reports whether fans may join at now: the event is on sale,
// the queue (or its pre-queue) has opened and the sale has not ended.
func (e *Event) QueueOpen(now time.Time) bool {
	return e.Status == EventOnSale && !now.Before(e.JoinOpensAt()) && now.Before(e.SaleEndsAt)
}

// JoinOpensAt returns when fans may first join: the pre-queue's opening if
// the event has one, else the queue's.
func (e *Event) JoinOpensAt() time.Time {
	if e.HasPrequeue() {
		return e.PrequeueOpensAt
	}
	return e.QueueOpensAt
}

// HasPrequeue reports whether the event has a pre-queue (and so a draw).
func (e *Event) HasPrequeue() bool { return !e.PrequeueOpensAt.IsZero() }

// InPrequeue reports whether at now fans who join enter the pre-queue (by
// this clock; the join script decides by Redis's).
func (e *Event) InPrequeue(now time.Time) bool {
	return e.HasPrequeue() && !now.Before(e.PrequeueOpensAt) && now.Before(e.QueueOpensAt)
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

// Input returns the event as the input that would save it unchanged, for an
// edit form (grades without their seat counts).
func (e *Event) Input() EventInput {
	in := EventInput{
		VenueID: e.VenueID, Title: maps.Clone(e.Title), Description: maps.Clone(e.Description), TimeZone: e.TimeZone,
		StartsAt: e.StartsAt, QueueOpensAt: e.QueueOpensAt, SaleEndsAt: e.SaleEndsAt, PrequeueOpensAt: e.PrequeueOpensAt,
		Currency: e.Currency, MaxPerAccount: e.MaxPerAccount, HoldTTL: e.HoldTTL, TokenTTL: e.TokenTTL,
		AdmissionRate: e.AdmissionRate, MaxShoppers: e.MaxShoppers, PowDifficulty: e.PowDifficulty,
	}
	for _, g := range e.Grades {
		in.Grades = append(in.Grades, Grade{Code: g.Code, Name: maps.Clone(g.Name), Price: g.Price, Color: g.Color})
	}
	return in
}

// EventInput is what an admin sets on an event, to create or update it.
// Times are instants (parse form values with ParseLocalTime or
// ReparseLocalTime in TimeZone); Grades' SeatsTotal and SeatsLeft are
// ignored. Every field must be set: NewEventInput fills in the defaults.
type EventInput struct {
	VenueID      int64
	Title        Text   // per language; at least one
	Description  Text   // per language; may be empty
	TimeZone     string // IANA name, such as "Asia/Seoul"
	StartsAt     time.Time
	QueueOpensAt time.Time
	SaleEndsAt   time.Time
	// PrequeueOpensAt is zero for no pre-queue, else before QueueOpensAt.
	PrequeueOpensAt time.Time
	Currency        string        // ISO 4217 code, such as "KRW"
	MaxPerAccount   int           // 1 to MaxPerAccountLimit
	HoldTTL         time.Duration // whole seconds, 1 s to MaxHoldTTL
	TokenTTL        time.Duration // whole seconds, 1 s to MaxTokenTTL
	AdmissionRate   int           // fans per second, 1 to MaxAdmissionRate
	MaxShoppers     int           // shoppers at once (live entry tokens); 0 means no cap
	PowDifficulty   int           // 0 (no proof of work) to MaxPowDifficulty
	Grades          []Grade       // Code, Name, Price (minor units), Color
}

// NewEventInput returns an input with the defaults of a new event (time
// zone, currency, limit, TTLs, admission rate), for a create form.
func NewEventInput() EventInput {
	return EventInput{
		TimeZone: DefaultTimeZone, Currency: DefaultCurrency, MaxPerAccount: DefaultMaxPerAccount,
		HoldTTL: DefaultHoldTTL, TokenTTL: DefaultTokenTTL, AdmissionRate: DefaultAdmissionRate,
	}
}

// Normalize trims the text fields (dropping empty languages), upper-cases
// the currency, and gives a grade without a name its code as name and one
// without a colour DefaultGradeColor.
func (in *EventInput) Normalize() {
	in.Title = in.Title.Trim()
	in.Description = in.Description.Trim()
	in.TimeZone = strings.TrimSpace(in.TimeZone)
	in.Currency = strings.ToUpper(strings.TrimSpace(in.Currency))
	for i := range in.Grades {
		g := &in.Grades[i]
		g.Code = strings.TrimSpace(g.Code)
		g.Name = g.Name.Trim()
		g.Color = strings.TrimSpace(g.Color)
		if g.Name.Empty() && g.Code != "" {
			g.Name = Text{"": g.Code}
		}
		if g.Color == "" {
			g.Color = DefaultGradeColor
		}
	}
}

var (
	colorRE = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
)

// Validate returns an EINVALID error naming every bad field at once, or nil.
// Fields are keyed by form name: "venue_id", "title" (1 to MaxTitleLen
// characters), "description" (at most MaxDescriptionLen), "time_zone" (an
// IANA name), "starts_at" (set, not before the queue opens),
// "queue_opens_at" (set), "sale_ends_at" (set, after the queue opens),
// "currency" (an ISO 4217 code that golang.org/x/text/currency knows), "max_per_account" (1 to
// MaxPerAccountLimit), "hold_ttl" and "token_ttl" (whole seconds up to
// MaxHoldTTL and MaxTokenTTL; the token's at least the hold's, so that a
// fan's entry token outlasts the seats held), "admission_rate" (1 to MaxAdmissionRate),
// "max_shoppers" (0 or more), "grades" (1 to MaxGrades), and per grade
// "grades[i].code" (1 to 8 ASCII letters or digits, unique), "grades[i].name"
// (1 to MaxGradeNameLen characters), "grades[i].price" (1 to MaxPrice minor
// units) and "grades[i].color" ("#rrggbb"), i counting from 0. It cannot know
// the venue's seats: the store adds "grades" when a seat's grade is missing.
// Call Normalize first.
func (in *EventInput) Validate() error {
	f := map[string]Msg{}
	if in.VenueID <= 0 {
		f["venue_id"] = M("val_venue_choose")
	}
	switch {
	case in.Title.Empty():
		f["title"] = M("val_title_empty")
	case len(in.Title.longer(MaxTitleLen)) > 0:
		f["title"] = M("val_title_long", "Max", MaxTitleLen)
	}
	if len(in.Description.longer(MaxDescriptionLen)) > 0 {
		f["description"] = M("val_description_long", "Max", MaxDescriptionLen)
	}
	if _, err := LoadTimeZone(in.TimeZone); err != nil {
		f["time_zone"] = ErrorMsg(err)
	}
	if in.StartsAt.IsZero() {
		f["starts_at"] = M("val_starts_at_empty")
	}
	if in.QueueOpensAt.IsZero() {
		f["queue_opens_at"] = M("val_queue_opens_at_empty")
	}
	if in.SaleEndsAt.IsZero() {
		f["sale_ends_at"] = M("val_sale_ends_at_empty")
	}
	if !in.QueueOpensAt.IsZero() {
		if !in.SaleEndsAt.IsZero() && !in.QueueOpensAt.Before(in.SaleEndsAt) {
			f["sale_ends_at"] = M("val_sale_ends_before_queue")
		}
		if !in.StartsAt.IsZero() && in.StartsAt.Before(in.QueueOpensAt) {
			f["starts_at"] = M("val_starts_before_queue")
		}
		if !in.PrequeueOpensAt.IsZero() && !in.PrequeueOpensAt.Before(in.QueueOpensAt) {
			f["prequeue_opens_at"] = M("val_prequeue_after_queue")
		}
	}
	if _, err := currency.ParseISO(in.Currency); err != nil || len(in.Currency) != 3 {
		f["currency"] = M("val_currency")
	}
	if in.MaxPerAccount < 1 || in.MaxPerAccount > MaxPerAccountLimit {
		f["max_per_account"] = M("val_max_per_account", "Max", MaxPerAccountLimit)
	}
	if in.HoldTTL < time.Second || in.HoldTTL > MaxHoldTTL || in.HoldTTL%time.Second != 0 {
		f["hold_ttl"] = M("val_hold_ttl", "Max", int(MaxHoldTTL/time.Second))
	}
	if in.TokenTTL < time.Second || in.TokenTTL > MaxTokenTTL || in.TokenTTL%time.Second != 0 {
		f["token_ttl"] = M("val_token_ttl", "Max", int(MaxTokenTTL/time.Second))
	} else if _, bad := f["hold_ttl"]; !bad && in.TokenTTL < in.HoldTTL {
		f["token_ttl"] = M("val_token_ttl_below_hold", "Hold", int(in.HoldTTL/time.Second))
	}
	if in.AdmissionRate < 1 || in.AdmissionRate > MaxAdmissionRate {
		f["admission_rate"] = M("val_admission_rate", "Max", MaxAdmissionRate)
	}
	if in.MaxShoppers < 0 {
		f["max_shoppers"] = M("val_max_shoppers")
	}
	if in.PowDifficulty < 0 || in.PowDifficulty > MaxPowDifficulty {
		f["pow_difficulty"] = M("val_pow_difficulty", "Max", MaxPowDifficulty)
	}
	switch {
	case len(in.Grades) == 0:
		f["grades"] = M("val_grades_none")
	case len(in.Grades) > MaxGrades:
		f["grades"] = M("val_grades_many", "Max", MaxGrades)
	}
	seen := map[string]bool{}
	for i, g := range in.Grades {
		key := fmt.Sprintf("grades[%d].", i)
		switch {
		case !ValidGradeCode(g.Code):
			f[key+"code"] = M("val_grade_code")
		case seen[g.Code]:
			f[key+"code"] = M("val_grade_code_taken")
		}
		seen[g.Code] = true
		if g.Name.Empty() || len(g.Name.longer(MaxGradeNameLen)) > 0 {
			f[key+"name"] = M("val_grade_name", "Max", MaxGradeNameLen)
		}
		if g.Price < 1 || g.Price > MaxPrice {
			f[key+"price"] = M("val_grade_price")
		}
		if !colorRE.MatchString(g.Color) {
			f[key+"color"] = M("val_grade_color")
		}
	}
	return Invalid(f)
}

// EventFilter narrows FindEvents. A zero filter lists every event.
type EventFilter struct {
	Statuses []string // only these statuses, if any
	Upcoming bool     // only events whose sale has not ended
}

// EventService stores events, their grades and their seats.
type EventService interface {
	// CreateEvent validates in and stores a draft event with its grades and a
	// copy of its venue's seats, all or nothing. Errors: EINVALID with Fields
	// (Validate's, "venue_id" for an unknown venue, "grades" naming every
	// grade of the venue's seats that in lacks).
	CreateEvent(ctx context.Context, in EventInput) (*Event, error)
	// UpdateEvent validates in and replaces the event's settings and grades.
	// Errors: ENOTFOUND; EINVALID as CreateEvent; ECONFLICT when the venue
	// would change once the event has orders, or when a grade with sold seats
	// would change its price; EINVALID "prequeue_opens_at" when the
	// pre-queue has opened and its time would change.
	UpdateEvent(ctx context.Context, id int64, in EventInput) (*Event, error)
	// PublishEvent puts a draft event on sale. Errors: ENOTFOUND; ECONFLICT
	// if it is not a draft or its sale has already ended.
	PublishEvent(ctx context.Context, id int64) (*Event, error)
	// CloseEvent ends a draft or on-sale event. Errors: ENOTFOUND; ECONFLICT
	// if it is closed already.
	CloseEvent(ctx context.Context, id int64) (*Event, error)
	// SetAdmission pauses or resumes admission and/or sets its rate (fans per
	// second); a nil argument keeps its setting. Errors: ENOTFOUND; EINVALID
	// ("rate" out of range, or both nil, "paused").
	SetAdmission(ctx context.Context, id int64, paused *bool, rate *int) (*Event, error)
	// FindEventByID returns the event with its grades, dearest first, with
	// SeatsTotal and SeatsLeft. Errors: ENOTFOUND.
	FindEventByID(ctx context.Context, id int64) (*Event, error)
	// FindEvents lists events by queue opening, without their grades.
	FindEvents(ctx context.Context, f EventFilter) ([]*Event, error)
	// EventSeats returns the event's seats with their grade's price, ordered
	// by section, row and number. Errors: ENOTFOUND.
	EventSeats(ctx context.Context, eventID int64) ([]Seat, error)
}
