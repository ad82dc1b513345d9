package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// countingEvents counts the loads that reach the real store.
type countingEvents struct {
	*store.Events
	loads atomic.Int32
}

func (c *countingEvents) FindEventByID(ctx context.Context, id int64) (*boxoffice.Event, error) {
	c.loads.Add(1)
	return c.Events.FindEventByID(ctx, id)
}

func TestEventCache_Event(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	ev := newHoldEvent(t, db, 4)
	events := &countingEvents{Events: &store.Events{DB: db}}
	now := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	c := &store.EventCache{Events: events, TTL: time.Second, Now: func() time.Time { return time.Unix(0, clock.Load()) }}

	var wg sync.WaitGroup
	for range 300 {
		wg.Go(func() {
			got, err := c.Event(ctx, ev.ID)
			if err != nil || got.ID != ev.ID {
				t.Errorf("Event = %+v, %v; want event %d", got, err, ev.ID)
			}
		})
	}
	wg.Wait()
	if n := events.loads.Load(); n != 1 {
		t.Fatalf("300 concurrent calls loaded the event %d times, want 1", n)
	}
	clock.Add(int64(999 * time.Millisecond))
	if _, err := c.Event(ctx, ev.ID); err != nil || events.loads.Load() != 1 {
		t.Fatalf("within the TTL: %v, %d loads; want the cached copy", err, events.loads.Load())
	}
	clock.Add(int64(time.Millisecond))
	if _, err := c.Event(ctx, ev.ID); err != nil || events.loads.Load() != 2 {
		t.Fatalf("after the TTL: %v, %d loads; want a second load", err, events.loads.Load())
	}
	c.Forget(ev.ID)
	if _, err := c.Event(ctx, ev.ID); err != nil || events.loads.Load() != 3 {
		t.Fatalf("after Forget: %v, %d loads; want a third load", err, events.loads.Load())
	}

	for range 3 {
		if _, err := c.Event(ctx, 987654); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
			t.Fatalf("unknown event: %v, want %s", err, boxoffice.ENOTFOUND)
		}
	}
	if n := events.loads.Load(); n != 4 {
		t.Fatalf("three asks for an unknown event made %d loads in all, want one more (not found is cached)", n)
	}
}

// failingEvents fails every load after the first, as a database that went
// away would.
type failingEvents struct {
	*store.Events
	loads atomic.Int32
}

func (f *failingEvents) FindEventByID(ctx context.Context, id int64) (*boxoffice.Event, error) {
	if f.loads.Add(1) > 1 {
		return nil, errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	return f.Events.FindEventByID(ctx, id)
}

// Through a PostgreSQL outage the cache serves the last copy of an event it
// had, and an event it never had is an error.
func TestEventCache_Event_Outage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	ev := newHoldEvent(t, db, 2)
	c := &store.EventCache{Events: &failingEvents{Events: &store.Events{DB: db}}, TTL: time.Nanosecond}
	first, err := c.Event(ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	got, err := c.Event(ctx, ev.ID)
	if err != nil || got != first {
		t.Fatalf("during the outage Event = %p, %v; want the last copy %p", got, err, first)
	}
	if _, err := c.Event(ctx, ev.ID+1); err == nil {
		t.Fatal("an event never loaded came back during the outage")
	}
}

// stuckEvents loads the event once; every later load waits for release, as
// one queued behind a busy PostgreSQL pool does.
type stuckEvents struct {
	*store.Events
	loads   atomic.Int32
	release chan struct{}
}

func (s *stuckEvents) FindEventByID(ctx context.Context, id int64) (*boxoffice.Event, error) {
	if s.loads.Add(1) > 1 {
		<-s.release
	}
	return s.Events.FindEventByID(ctx, id)
}

// Callers whose ctx ends while a reload is stuck get the last copy, or
// ctx's error when there is none; those who wait get the reload's copy.
func TestEventCache_Event_WaitEnds(t *testing.T) {
	t.Parallel()
	db := storetest.MustOpenDB(t)
	ev := newHoldEvent(t, db, 2)
	events := &stuckEvents{Events: &store.Events{DB: db}, release: make(chan struct{})}
	c := &store.EventCache{Events: events, TTL: time.Nanosecond}
	first, err := c.Event(context.Background(), ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if got, err := c.Event(ctx, ev.ID); err != nil || got != first {
				t.Errorf("ended wait: Event = %p, %v; want the last copy %p", got, err, first)
			}
			if _, err := c.Event(ctx, ev.ID+1); !errors.Is(err, context.Canceled) {
				t.Errorf("ended wait for an event never loaded: %v, want %v", err, context.Canceled)
			}
		})
	}
	wg.Wait()
	done := make(chan *boxoffice.Event)
	go func() {
		got, err := c.Event(context.Background(), ev.ID)
		if err != nil {
			t.Errorf("waiting caller: %v", err)
		}
		done <- got
	}()
	close(events.release)
	if got := <-done; got == nil || got == first || got.ID != ev.ID {
		t.Errorf("waiting caller got %p, want the reloaded event (not %p)", got, first)
	}
}
