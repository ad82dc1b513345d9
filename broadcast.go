package boxoffice

import (
	"context"
	"time"
)

// MaxBroadcastLen is the longest broadcast message, in characters.
const MaxBroadcastLen = 280

// Broadcast is an admin's message to every fan of an event, shown in its
// waiting room and on its seat map until replaced or until it expires. The
// zero Broadcast is none.
type Broadcast struct {
	ID      string    // random, new for every message
	Message string    // plain text, 1 to MaxBroadcastLen characters: escaped wherever shown
	SentAt  time.Time // the store's clock
}

// BroadcastService sends and reads events' broadcasts.
type BroadcastService interface {
	// Broadcast makes message (trimmed) the event's broadcast, replacing
	// the one before, and writes it to the audit log as adminID's action.
	// Errors, with nothing changed: EBADREQUEST for an empty message or
	// one over MaxBroadcastLen characters; ENOTFOUND for an unknown event.
	Broadcast(ctx context.Context, adminID, eventID int64, message string) (Broadcast, error)
	// LatestBroadcast returns the event's broadcast (the zero Broadcast for
	// none), as read at most a moment ago by any caller of the process.
	LatestBroadcast(ctx context.Context, eventID int64) (Broadcast, error)
}
