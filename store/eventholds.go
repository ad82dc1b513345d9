package store

import (
	"context"

	_ "embed"

	"github.com/boxoffice/boxoffice"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/live_held.lua
var liveHeldSrc string

// liveHeldLabels reads the labels of an event's live holds (held:{e}) at one
// instant of Redis's clock.
var liveHeldLabels = redis.NewScript(liveHeldSrc)

// EventWithHolds returns the event as Events.FindEventByID does, except that
// its grades' SeatsHeld also count the seats held in Redis without an order
// (a live hold: held:{e} with an expiry not past by Redis's clock), which
// SeatsLeft then leaves out. Cost: one read-only Redis script (O(held
// seats)) and FindEventByID's statement; EventCache shares one call per
// event and TTL among all readers. When Redis does not answer, the live
// holds are left out (the counts are PostgreSQL's alone) rather than the
// event going unseen: no seat can be held then anyway. Errors: ENOTFOUND;
// PostgreSQL's.
func (h *Holds) EventWithHolds(ctx context.Context, eventID int64) (*boxoffice.Event, error) {
	held, err := liveHeldLabels.RunRO(ctx, h.Redis.Client, []string{h.Redis.Key("held:{%d}", eventID)}).StringSlice()
	if err != nil {
		held = nil
	}
	return findEvent(ctx, h.DB.Pool, eventID, held)
}
