package store

import (
	"context"

	"github.com/boxoffice/boxoffice"
)

// EventWithHolds returns the event as Events.FindEventByID does, except that
// its grades' SeatsHeld also count the seats held in Redis without an order
// (a live hold: held:{e} with an expiry not past by Redis's clock), which
// SeatsLeft then leaves out. Cost: one read-only Redis script, the one
// SaleFigures runs (O(held seats)), and FindEventByID's statement;
// EventCache shares one call per event and TTL among all readers. When Redis does not answer, the live
// holds are left out (the counts are PostgreSQL's alone) rather than the
// event going unseen: no seat can be held then anyway. Errors: ENOTFOUND;
// PostgreSQL's.
func (h *Holds) EventWithHolds(ctx context.Context, eventID int64) (*boxoffice.Event, error) {
	held, err := liveHeldScript.RunRO(ctx, h.Redis.Client, []string{h.heldKey(eventID)}).StringSlice()
	if err != nil {
		held = nil
	}
	return findEvent(ctx, h.DB.Pool, eventID, held)
}
