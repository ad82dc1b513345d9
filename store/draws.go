package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"

	"github.com/boxoffice/boxoffice"
)

// Draws keeps each event's draw seed (boxoffice.DrawSeedBytes random bytes)
// in PostgreSQL's event_draw, drawn once: the first caller inserts it and
// ON CONFLICT keeps the first, so instances racing agree. A seed never
// changes, so each instance keeps the ones it read. It is safe for
// concurrent use.
type Draws struct {
	DB *DB

	mu    sync.Mutex
	seeds map[int64][]byte
}

// Seed returns the event's draw seed, drawing it if it has none. Errors:
// ENOTFOUND for an unknown event.
func (d *Draws) Seed(ctx context.Context, eventID int64) ([]byte, error) {
	d.mu.Lock()
	seed, ok := d.seeds[eventID]
	d.mu.Unlock()
	if ok {
		return seed, nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("draw seed: %w", err)
	}
	_, err := d.DB.Pool.Exec(ctx, `INSERT INTO event_draw (event_id, seed) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING`, eventID, fresh)
	if pgErrCode(err) == "23503" {
		return nil, boxoffice.NewError(boxoffice.ENOTFOUND, "err_no_event")
	} else if err != nil {
		return nil, fmt.Errorf("draw seed of event %d: %w", eventID, err)
	}
	if err := d.DB.Pool.QueryRow(ctx, `SELECT seed FROM event_draw WHERE event_id = $1`, eventID).Scan(&seed); err != nil {
		return nil, fmt.Errorf("draw seed of event %d: %w", eventID, err)
	}
	d.mu.Lock()
	if d.seeds == nil {
		d.seeds = map[int64][]byte{}
	}
	d.seeds[eventID] = seed
	d.mu.Unlock()
	return seed, nil
}
