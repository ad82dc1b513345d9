package boxoffice

import "context"

// Actions of a change of blocked seats (BlockRequest.Action).
const (
	BlockActionBlock   = "block"   // hold seats back: they cannot be held or sold
	BlockActionUnblock = "unblock" // give blocked seats back to the sale
)

// BlockRequest is an admin's change of an event's blocked seats: Seats
// (labels, at least one) blocked or unblocked as Action says, by AdminID.
type BlockRequest struct {
	EventID int64
	AdminID int64
	Action  string
	Seats   []string
}

// BlockResult is a change of blocked seats as done: the seats asked for
// (sorted), the event's blocked seats after it (sorted), and whether any
// seat changed (false: every seat was blocked already, for a block, or none
// was, for an unblock; nothing was written).
type BlockResult struct {
	EventID int64    `json:"event_id"`
	Action  string   `json:"action"`
	Seats   []string `json:"seats"`
	Blocked []string `json:"blocked"`
	Changed bool     `json:"changed"`
}

// BlockService blocks and unblocks an event's seats (seats an admin holds
// back for production, cameras or guests: they cannot be held or sold, fans
// see them unavailable, and they count as neither free nor sold). Safe for
// concurrent use.
type BlockService interface {
	// ChangeBlocks applies req, all seats or none; see store.Blocks.
	ChangeBlocks(ctx context.Context, req BlockRequest) (*BlockResult, error)
	// BlockedSeats returns the event's blocked seat labels, sorted.
	BlockedSeats(ctx context.Context, eventID int64) ([]string, error)
}
