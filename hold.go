package boxoffice

import (
	"context"
	"regexp"
	"time"
	"unicode"
	"unicode/utf8"
)

// SeatStatus is what the seat map shows for one seat to one account.
type SeatStatus string

// Seat statuses, as CONTRACT.md names them in the seat map's JSON.
const (
	SeatFree SeatStatus = "free" // nobody holds it and it is not sold
	SeatHeld SeatStatus = "held" // another account holds it
	SeatSold SeatStatus = "sold" // sold (a sold_seat row)
	SeatMine SeatStatus = "mine" // the asking account holds it
)

// labelSectionMax is the longest section name in a seat label, in
// characters (venue_seat's CHECK constraint).
const labelSectionMax = 40

// MaxSeatLabelLen is the longest seat label, in characters: a section of
// labelSectionMax, then a row and a number of up to 4 digits each.
const MaxSeatLabelLen = labelSectionMax + 10

// labelNumber is a row or seat number in a seat label: digits from 1, at most
// 4 of them (venue_seat's CHECK constraints).
var labelNumber = regexp.MustCompile(`^[1-9][0-9]{0,3}$`)

// ValidSeatLabel reports whether label has the shape of a seat label,
// "section-row-number" (see SeatLabel): a section of 1 to 40
// printable characters (it may itself contain "-"), then a row and a number of
// 1 to 4 digits without a leading zero. It says nothing about whether the seat
// exists.
func ValidSeatLabel(label string) bool {
	if !utf8.ValidString(label) {
		return false
	}
	i := lastDash(label)
	if i < 0 || !labelNumber.MatchString(label[i+1:]) {
		return false
	}
	rest := label[:i]
	j := lastDash(rest)
	if j < 0 || !labelNumber.MatchString(rest[j+1:]) {
		return false
	}
	section := rest[:j]
	if n := utf8.RuneCountInString(section); n < 1 || n > labelSectionMax {
		return false
	}
	for _, r := range section {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func lastDash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '-' {
			return i
		}
	}
	return -1
}

// Shopper is an account at an event's seat map, in one browser session.
// SessionKey is the session's key ("sid", SessionKeyFromContext) that the
// account's entry token must be bound to (DESIGN rule 5): the hold services
// check it in the same Redis step as the action, and refuse with
// ENOENTRYTOKEN (Details["reason"] ReasonOtherSession, ReasonExpired or
// ReasonNone). An empty SessionKey skips that check: for callers that act
// for the box office itself (the confirmation, tests), never for a request
// of a fan.
type Shopper struct {
	EventID    int64
	AccountID  int64
	SessionKey string
}

// HoldRequest says who holds seats of which event, under which rules. Limit
// is the event's MaxPerAccount (tickets the account may hold plus own, all
// grades together) and TTL its HoldTTL (how long a new hold lasts, counted in
// whole milliseconds on Redis's clock). SessionKey is as Shopper's.
type HoldRequest struct {
	EventID    int64
	AccountID  int64
	SessionKey string
	Limit      int
	TTL        time.Duration
}

// Shopper returns who asks.
func (r HoldRequest) Shopper() Shopper {
	return Shopper{EventID: r.EventID, AccountID: r.AccountID, SessionKey: r.SessionKey}
}

// HoldResult is the answer to a granted hold. Held lists the requested labels
// in request order, all now held by the account; Added is how many of them
// the hold held anew (the others the account held already, as a form sent
// again asks for them). TTL is the time left, on
// Redis's clock, until the first of them ends (a seat the account already
// held keeps its earlier expiry), and ExpiresAt is that instant. Mine is the
// account's own part of the seat map after the hold (its holds, their time
// left and its bought tickets; no other seat's status), read in the same
// step.
type HoldResult struct {
	Held      []string
	Added     int
	TTL       time.Duration
	ExpiresAt time.Time
	Mine      SeatMapState
}

// SeatMapState is the live state of an event's seats for one account, read
// at one instant of Redis's clock (Now). Statuses holds only the seats that
// are not free (a label that is absent is free); Mine lists the account's live
// holds, sorted; HoldsTTL is the time left until the first of them ends (0
// without holds); Owned is the tickets the account already bought for the
// event; InOrder maps those of Mine that are in the account's order
// awaiting payment to the order's id (nil when none is): they cannot be
// released until the order is paid or ends.
type SeatMapState struct {
	Statuses map[string]SeatStatus
	Mine     []string
	HoldsTTL time.Duration
	Owned    int
	Now      time.Time
	InOrder  map[string]string
}

// SetInOrder records that the held seat label is in the order orderID
// awaiting payment (InOrder).
func (s *SeatMapState) SetInOrder(label, orderID string) {
	if s.InOrder == nil {
		s.InOrder = map[string]string{}
	}
	s.InOrder[label] = orderID
}

// Status returns the status of the seat with the given label.
func (s SeatMapState) Status(label string) SeatStatus {
	if st, ok := s.Statuses[label]; ok {
		return st
	}
	return SeatFree
}

// Left returns how many more seats the account may hold under limit (the
// event's MaxPerAccount): limit minus owned tickets minus live holds, never
// below 0. It makes the page's "2 more of your 5".
func (s SeatMapState) Left(limit int) int {
	return max(0, limit-s.Owned-len(s.Mine))
}

// HoldService holds seats for accounts. Holds live in Redis and end by
// themselves when their TTL passes; sold seats and bought tickets come from
// PostgreSQL. All methods are safe for concurrent use, and each rule (all
// seats or none, one holder per seat, the per-account limit) is decided in one
// atomic step.
type HoldService interface {
	// Hold holds every seat in labels for req.AccountID, or none. Holding a
	// seat the account already holds is no error: the seat counts once and
	// keeps its expiry. Errors: ENOENTRYTOKEN (see Shopper); EBADSEAT (no
	// seats, more than req.Limit, a malformed, duplicate or unknown label,
	// Details["seats"] the bad labels); ESEATTAKEN (a seat is held by
	// another account or sold, Details["seats"]); ELIMITEXCEEDED (live
	// holds + bought + new seats would pass req.Limit, Details "limit",
	// "owned", "held"). With ESEATTAKEN and ELIMITEXCEEDED the result's
	// Mine is still filled.
	Hold(ctx context.Context, req HoldRequest, labels []string) (HoldResult, error)
	// HoldBest holds the best quantity free seats of grade side by side in
	// one row for req.AccountID (best available), or none; the result's Held
	// lists them in their order along the row. Errors: ENOENTRYTOKEN (see
	// Shopper); EBADCHOICE (an unknown grade, a quantity under 1 or more
	// than the account may still hold, Details["left"] then); ENOTTOGETHER
	// (no such block is left, Details["left"] the free seats of the grade).
	// With EBADCHOICE from the limit and ENOTTOGETHER the result's Mine is
	// still filled.
	HoldBest(ctx context.Context, req HoldRequest, grade string, quantity int) (HoldResult, error)
	// Release ends the shopper's own hold on a seat and returns the
	// account's own part of the seat map after it (as HoldResult.Mine).
	// Errors: ENOENTRYTOKEN (see Shopper); EBADSEAT for a malformed or
	// unknown label; ENOTFOUND when the account does not hold the seat
	// (free, expired, sold or held by another account), changing nothing,
	// with the state still returned; ESEATINORDER (Details["order_id"])
	// when the seat is in the account's order awaiting payment, which keeps
	// it held until the order is paid or ends, changing nothing, with the
	// state still returned.
	Release(ctx context.Context, s Shopper, label string) (SeatMapState, error)
	// SeatStatuses returns the state of all the event's seats for the
	// shopper, with a constant number of Redis round trips. Errors:
	// ENOENTRYTOKEN (see Shopper).
	SeatStatuses(ctx context.Context, s Shopper) (SeatMapState, error)
	// MyHolds returns the account's live holds for the event, sorted, and the
	// time left until the first ends (none: an empty list and 0).
	MyHolds(ctx context.Context, eventID, accountID int64) ([]string, time.Duration, error)
	// ExtendHolds moves the expiry of those of labels that the account still
	// holds to ttl from now (never earlier than it was), for the order
	// orderID, whose expiry then ends only those holds; while the order
	// awaits payment its seats cannot be released (Release, Leave). In the
	// same step the account's live entry token lasts at least as long, so
	// that the turn outlives the order's payment window. Errors:
	// ESEATTAKEN with Details["seats"] the labels no longer held (the others
	// were extended, and none of them is the order's then: the caller
	// cancels it).
	ExtendHolds(ctx context.Context, eventID, accountID int64, orderID string, labels []string, ttl time.Duration) error
	// MarkSold records in Redis, after the confirmation committed, that
	// labels are sold and that the account bought boughtTotal tickets of the
	// event in all, and ends the holds on those seats.
	// When the account then holds nothing more of the event, its entry
	// token ends too (its place among the shoppers frees).
	MarkSold(ctx context.Context, eventID, accountID int64, labels []string, boughtTotal int) error
	// Leave ends the shopper's turn: all the account's holds for the event
	// and its entry token end at once, so that its place among the
	// shoppers frees for the next admission. Errors: ENOENTRYTOKEN (see
	// Shopper); EORDERPENDING (Details["order_id"]) while the account has an
	// order awaiting payment, whose seats stay held; with either, nothing
	// changed.
	Leave(ctx context.Context, s Shopper) error
	// SaleFigures returns the event's seats by state and grade, revenue and
	// the last minute's orders, failed payments and refunds (SaleFigures).
	// Errors: ENOTFOUND for an unknown event.
	SaleFigures(ctx context.Context, eventID int64) (SaleFigures, error)
}
