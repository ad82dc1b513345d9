package store

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"golang.org/x/sync/singleflight"
)

// EventCache keeps each event (with its grades and seat counts) in memory for
// TTL, so that the hot paths of a sale (join, position, holds) cost no
// PostgreSQL query per request: at most one per event per TTL per process,
// however many fans ask at once. What it returns may be up to TTL old; use
// the Events store directly where that matters (admin pages).
type EventCache struct {
	Events boxoffice.EventService
	// Holds, when set, loads each event with its live holds counted as
	// held (Holds.EventWithHolds) instead of through Events, so that fans
	// see a seat held in Redis as held, not free.
	Holds *Holds
	TTL   time.Duration // 1 s when zero
	Now   func() time.Time

	mu      sync.Mutex
	entries map[int64]cachedEvent
	loads   singleflight.Group
}

type cachedEvent struct {
	event *boxoffice.Event
	err   error
	at    time.Time
}

// Event returns the event, loading it when the cached copy is older than
// TTL. A "not found" answer is cached too, so unknown ids cannot hammer the
// database. When a reload fails (PostgreSQL is down), the last copy is
// served instead, so that holds keep working from Redis through an outage.
// A caller whose ctx ends while it waits for a reload gets the last copy
// too (the reload goes on for the others). Errors: ENOTFOUND, the store's
// error or ctx's when there is no copy at all. The returned event is
// shared: callers must not modify it.
func (c *EventCache) Event(ctx context.Context, id int64) (*boxoffice.Event, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl() {
		return e.event, e.err
	}
	ch := c.loads.DoChan(strconv.FormatInt(id, 10), func() (any, error) {
		// A load that ended between the look-up above and DoChan has
		// stored a fresh copy: serve it rather than load again.
		c.mu.Lock()
		fresh, hit := c.entries[id]
		c.mu.Unlock()
		if hit && c.now().Sub(fresh.at) < c.ttl() {
			return fresh.event, fresh.err
		}
		ev, err := c.load(context.WithoutCancel(ctx), id)
		if err == nil || boxoffice.ErrorCode(err) == boxoffice.ENOTFOUND {
			c.mu.Lock()
			if c.entries == nil {
				c.entries = map[int64]cachedEvent{}
			}
			c.entries[id] = cachedEvent{event: ev, err: err, at: c.now()}
			c.mu.Unlock()
		}
		return ev, err
	})
	var v any
	var err error
	select {
	case r := <-ch:
		v, err = r.Val, r.Err
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil && ok && e.err == nil && boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		return e.event, nil
	}
	if err != nil {
		return nil, err
	}
	return v.(*boxoffice.Event), nil
}

// load reads the event from the store: through Holds when set, else Events.
func (c *EventCache) load(ctx context.Context, id int64) (*boxoffice.Event, error) {
	if c.Holds != nil {
		return c.Holds.EventWithHolds(ctx, id)
	}
	return c.Events.FindEventByID(ctx, id)
}

// Forget drops the cached copy of an event, so that the next call loads it
// (after an admin changed it on this instance).
func (c *EventCache) Forget(id int64) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}

func (c *EventCache) ttl() time.Duration {
	if c.TTL == 0 {
		return time.Second
	}
	return c.TTL
}

func (c *EventCache) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}
