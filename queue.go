package boxoffice

import (
	"context"
	"errors"
	"math"
	"time"
)

// Statuses of a fan in an event's waiting room (QueuePosition.Status).
const (
	QueueWaiting  = "waiting"  // in line; Position, Ahead and ETA say where
	QueueAdmitted = "admitted" // holds a live entry token
	QueueSoldOut  = "sold_out" // in line (or trying to join) but the event sold out
	QueueReset    = "reset"    // had a place, but the waiting room lost its state (Redis restart)
	QueuePrequeue = "prequeue" // in the pre-queue, before the draw; Ticket and Entrants say more
	// The next ones appear only in the batched QueueService.Positions (but
	// QueueOtherSession, which only Position tells); Position returns
	// ENOTINQUEUE for them, with the Reason* of the same name (ReasonNone
	// for QueueNotInQueue).
	QueueExpired      = "expired"       // was admitted, and the entry token has expired
	QueueDone         = "done"          // was admitted, and the turn ended with the fan's confirmed order
	QueueLeft         = "left"          // was admitted, and the turn ended when the fan left the sale or logged out
	QueueOtherSession = "other_session" // admitted, but the entry token is bound to another session of the account
	QueueNotInQueue   = "not_in_queue"  // neither waiting nor admitted
)

// Reasons carried in Details["reason"] of ENOENTRYTOKEN and ENOTINQUEUE
// errors, so that handlers can say why: an expired token sends the fan back
// to the queue.
const (
	ReasonNone         = "none"          // never admitted, or Redis lost the token
	ReasonExpired      = "expired"       // admitted, but the token's TTL has run out
	ReasonOtherSession = "other_session" // the live token was issued, or moved by a rejoin, to another session
	ReasonDone         = "done"          // the turn ended with the fan's confirmed order, nothing more held
	ReasonLeft         = "left"          // the turn ended when the fan left the sale or logged out
)

// Defaults of the admitter.
const (
	DefaultAdmissionTick = time.Second
	// RateWindow is how many recent ticks the measured admission rate covers.
	RateWindow = 10
)

// QueuePosition is where a fan stands in an event's waiting room.
type QueuePosition struct {
	Status string // one of the Queue* statuses
	// Position is the fan's place in line counted from the head (1 = in the
	// next batch), exact as of the last admission; 0 unless waiting or sold out.
	Position int
	Ahead    int // fans in line before this one: Position-1
	// ETA is the estimated wait until admission, a whole number of ticks,
	// from the measured admission rate; 0 when it cannot be estimated (paused,
	// sold out) or the fan is not waiting.
	ETA time.Duration
	// Sequence is the fan's join number (from the INCR counter); it never
	// changes while the fan waits, rejoins included. 0 unless waiting.
	Sequence int64
	Paused   bool // admission is paused by an admin
	// Epoch names this incarnation of the waiting room: 22 base64url
	// characters (ValidQueueEpoch). The handler keeps the value from Join
	// and passes it to Position: after Redis lost the queue the epochs
	// differ and the fan is told QueueReset.
	Epoch string
	// Ticket is the fan's draw ticket (32 lower-case hex characters) and
	// Entrants the pre-queue's size, for QueuePrequeue.
	Ticket   string
	Entrants int
}

// QueuePlace is what a browser keeps of its place in an event's line, from
// its last Join (the waiting room's cookie): the queue's Epoch and the
// place's join Sequence. It grants nothing: a forged or stale one can at
// most make the waiting room show a wrong position or say that the line was
// reset. SessionKey is the asking session's key (never from the browser):
// an account admitted with a token bound to another session is told so
// (ReasonOtherSession); empty skips that check.
type QueuePlace struct {
	Epoch      string
	Sequence   int64
	SessionKey string
}

// queueEpochLen is the length of a queue epoch: 128 random bits in
// base64url without padding.
const queueEpochLen = 22

// ValidQueueEpoch reports whether s has the shape of a queue epoch
// (QueuePosition.Epoch): 22 characters of the base64url alphabet
// (A-Z a-z 0-9 - _). It does not tell whether such an epoch ever was.
func ValidQueueEpoch(s string) bool {
	if len(s) != queueEpochLen {
		return false
	}
	for _, c := range []byte(s) {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Progress returns how far the fan has come since joining at place start
// (the Position that Join returned, kept in the session): 0 at joining, 1
// when admitted, in [0, 1].
func (p QueuePosition) Progress(start int) float64 {
	switch {
	case p.Status == QueueAdmitted:
		return 1
	case p.Status != QueueWaiting || start <= 0 || p.Position >= start:
		return 0
	}
	return float64(start-p.Position) / float64(start)
}

// QueueStats are an event's waiting-room figures for the admin live page.
type QueueStats struct {
	Waiting       int     // fans in line
	Joined        int64   // places handed out since the queue started (the join sequence)
	AdmittedTotal int64   // fans admitted since the queue started
	LiveTokens    int     // entry tokens not yet expired
	AchievedRate  float64 // fans admitted per second over the last RateWindow ticks
	Rate          int     // configured fans per second, as of the admitter's last tick
	Paused        bool
	SoldOut       bool
}

// QueueService is an event's waiting room: places in line, positions, and
// the entry tokens that admission hands out (DESIGN.md rules 5, 6, 7).
// Callers check that the queue is open (Event.QueueOpen) before Join; the
// service does not read events.
type QueueService interface {
	// Join gives the account a place in the event's line, or keeps its place
	// if it has one, and binds the place to sessionKey (the session's "sid"),
	// so that a rejoin from another tab or device moves the binding there.
	// An account with a live entry token gets QueueAdmitted (its token stays
	// bound to the session it was issued to); after a sell-out, QueueSoldOut
	// and no place.
	// Errors: ELIMITREACHED when the account already bought r.Limit
	// tickets of the event (as far as Redis's copy of the bought counts
	// knows: without the copy the limit is left to holding and
	// confirmation).
	Join(ctx context.Context, r JoinRequest) (QueuePosition, error)
	// Position returns where the account stands. place is what the browser
	// kept from its last Join (the zero QueuePlace if nothing): a place the
	// instance's shared figures of the current tick show still waiting is
	// answered from them, with no Redis round trip. Errors: ENOTINQUEUE
	// (with Details["reason"] ReasonExpired, ReasonDone, ReasonLeft or
	// ReasonNone) when the account is neither waiting nor admitted and
	// place's epoch is still current, and (ReasonOtherSession) when it is
	// admitted with a token bound to a session other than place.SessionKey.
	Position(ctx context.Context, eventID, accountID int64, place QueuePlace) (QueuePosition, error)
	// Positions is Position for many fans in one Redis round trip, whatever
	// their number: fans maps account ids to their sessions' epochs. Every
	// account gets an entry; those Position would refuse get QueueExpired,
	// QueueDone, QueueLeft or QueueNotInQueue (the session binding is not
	// checked).
	Positions(ctx context.Context, eventID int64, fans map[int64]string) (map[int64]QueuePosition, error)
	// EntrySessions returns, for each account, the session key its live
	// entry token is bound to ("" when it holds none), in one Redis round
	// trip: with Positions, it tells a stream of another session of an
	// admitted account that the turn is not its (QueueOtherSession).
	EntrySessions(ctx context.Context, eventID int64, accounts []int64) (map[int64]string, error)
	// EntryToken returns the account's live entry token and its remaining
	// TTL if it was issued (or moved by a rejoin) to sessionKey. Errors:
	// ENOENTRYTOKEN with a Reason* in Details["reason"].
	EntryToken(ctx context.Context, eventID, accountID int64, sessionKey string) (string, time.Duration, error)
	// CheckEntry returns nil if the account holds a live entry token that
	// was issued (or moved by a rejoin) to sessionKey: the token is bound to
	// the session, so a session holds nothing that could be copied. Errors:
	// ENOENTRYTOKEN with a Reason* in Details["reason"].
	CheckEntry(ctx context.Context, eventID, accountID int64, sessionKey string) error
	// SetPaused tells the event's waiting room at once that admission is
	// paused or resumed (the admin's change, already stored), so that joins
	// and polls say so before the next admission tick publishes it.
	SetPaused(ctx context.Context, eventID int64, paused bool) error
	// QueueStats returns the event's waiting-room figures.
	QueueStats(ctx context.Context, eventID int64) (QueueStats, error)
	// Draw places the event's pre-queue in line if drawAt has come (by
	// the service's clock) and it was not drawn yet, once however many
	// call; it reports whether the event is drawn.
	Draw(ctx context.Context, eventID int64, drawAt time.Time) (bool, error)
	// DrawState returns whether the pre-queue was drawn, its number of
	// entrants and, once drawn, every ticket in drawn order.
	DrawState(ctx context.Context, eventID int64) (drawn bool, entrants int, tickets []string, err error)
	// PrequeueTicket returns the account's draw ticket ("" for none) and
	// the pre-queue's number of entrants.
	PrequeueTicket(ctx context.Context, eventID, accountID int64) (string, int, error)
}

// DrawSeeds keeps each event's secret draw seed (DrawSeedBytes bytes),
// drawn once.
type DrawSeeds interface {
	// Seed returns the event's seed, drawing it if it has none. Errors:
	// ENOTFOUND.
	Seed(ctx context.Context, eventID int64) ([]byte, error)
}

// JoinRequest is a fan asking for a place in an event's line.
type JoinRequest struct {
	EventID    int64
	AccountID  int64
	SessionKey string // the session's "sid", which the place is bound to
	// Limit is the event's MaxPerAccount: an account that already bought
	// that many tickets gets no place (ELIMITREACHED). 0 skips the check.
	Limit int
	// DrawAt is the draw's time (the event's QueueOpensAt) for an event
	// with a pre-queue, zero for none. Before it (by Redis's clock) the fan
	// enters the pre-queue with Ticket (kept if the account has one);
	// Rank is DrawRank(seed, Ticket). The first join at or after it, or
	// the admitter's first tick, draws.
	DrawAt       time.Time
	Ticket, Rank string
	// Proof is the challenge (64 hex characters) of the proof of work the
	// join came with, verified by the caller, "" for none: each is taken
	// once (ECHALLENGEFAILED for a proof used before), and remembered
	// until ProofExpires.
	Proof        string
	ProofExpires time.Time
}

// AdmissionSettings are an event's admission figures, read by the admitter
// every tick so that an admin's pause, resume or new rate takes effect at
// the next tick.
type AdmissionSettings struct {
	EventID     int64
	Rate        int           // fans admitted per second
	MaxShoppers int           // shoppers at once (live entry tokens); 0 means no cap
	Paused      bool          // admission paused by an admin
	TokenTTL    time.Duration // lifetime of an entry token, at least 1 ms
	SoldOut     bool          // no seat left: admission stops and waiting fans are told
	DrawAt      time.Time     // the pre-queue's draw, zero without a pre-queue: done before admitting
}

// AdmissionSource lists the events whose queue is open at now (the start of
// the tick): the app implements it from PostgreSQL (Event.QueueOpen, the
// admission columns, and whether any seat is left). Sold-out events stay in
// the list, with SoldOut set, while their queue is open: that is how waiting
// fans learn of the sell-out.
type AdmissionSource interface {
	OpenQueues(ctx context.Context, now time.Time) ([]AdmissionSettings, error)
}

// TickIndex returns the number of the tick that now falls in: Unix
// milliseconds divided by the tick's length. Every instance reading the same
// clock (Redis's) gets the same number.
func TickIndex(now time.Time, tick time.Duration) int64 {
	return now.UnixMilli() / tick.Milliseconds()
}

// AdmissionBatch returns how many fans tick number index admits at rate fans
// per second: over any run of ticks the batches add up to rate times the run's
// length, rounded down, so rates below one fan per tick still admit (rate 1
// with 300 ms ticks admits 1 fan in every third or fourth tick). The cap on
// live tokens is applied by the admission script, where it is atomic.
func AdmissionBatch(rate int, tick time.Duration, index int64) int {
	if rate <= 0 || tick < time.Millisecond {
		return 0
	}
	per := int64(rate) * tick.Milliseconds() // fans per tick, times 1000
	return int((index+1)*per/1000 - index*per/1000)
}

// AdmissionRecord is what the admitter did for an event in one tick.
type AdmissionRecord struct {
	Tick     int64 // tick index (TickIndex)
	Admitted int   // fans admitted
	Backlog  bool  // fans were still waiting after the batch
}

// AdmissionPace is the per-event figures the admitter shares, from which
// every fan's wait is estimated.
type AdmissionPace struct {
	Tick    time.Duration     // length of a tick
	Rate    int               // configured fans per second
	Paused  bool              // admission paused by an admin
	Records []AdmissionRecord // recent ticks that admitted, in any order
}

// inWindow reports whether r is among the last RateWindow ticks at now.
func (p AdmissionPace) inWindow(r AdmissionRecord, now time.Time) bool {
	cur := TickIndex(now, p.Tick)
	return r.Tick <= cur && r.Tick > cur-RateWindow
}

// AchievedRate returns the fans admitted per second over the last
// RateWindow ticks at now.
func (p AdmissionPace) AchievedRate(now time.Time) float64 {
	if p.Tick < time.Millisecond {
		return 0
	}
	n := 0
	for _, r := range p.Records {
		if p.inWindow(r, now) {
			n += r.Admitted
		}
	}
	return float64(n) / (RateWindow * p.Tick.Seconds())
}

// WaitRate returns the rate in fans per second that waits are estimated
// from: the admissions of the recent ticks that left a backlog (ticks that
// emptied the line say nothing about how fast a line moves), else the
// configured rate; 0 while paused.
func (p AdmissionPace) WaitRate(now time.Time) float64 {
	if p.Paused || p.Tick < time.Millisecond {
		return 0
	}
	n, ticks := 0, 0
	for _, r := range p.Records {
		if r.Backlog && p.inWindow(r, now) {
			n += r.Admitted
			ticks++
		}
	}
	if ticks == 0 {
		return float64(max(p.Rate, 0))
	}
	return float64(n) / (float64(ticks) * p.Tick.Seconds())
}

// EstimateWait returns how long a fan at place position waits at now: the
// ticks needed at WaitRate, rounded up to whole ticks; 0 when the rate is 0
// (paused, or the cap admits nobody), meaning no estimate.
func (p AdmissionPace) EstimateWait(position int, now time.Time) time.Duration {
	rate := p.WaitRate(now)
	if position <= 0 || rate <= 0 {
		return 0
	}
	perTick := rate * p.Tick.Seconds()
	ticks := math.Ceil(float64(position) / perTick)
	if ticks > float64(math.MaxInt64/p.Tick) {
		return 0
	}
	return time.Duration(ticks) * p.Tick
}

// NoEntryReason returns the Reason* of an ENOENTRYTOKEN or ENOTINQUEUE
// error, or "" for any other error.
func NoEntryReason(err error) string {
	var e *Error
	if !errors.As(err, &e) || (e.Code != ENOENTRYTOKEN && e.Code != ENOTINQUEUE) {
		return ""
	}
	r, _ := e.Details["reason"].(string)
	return r
}
