package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/redis/go-redis/v9"
)

// refreshHook counts the reads of an event's shared figures (each read of
// queue positions reads them).
type refreshHook struct{ refreshes atomic.Int64 }

func (h *refreshHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *refreshHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if store.IsPositionsRead(cmd) {
			h.refreshes.Add(1)
		}
		return err
	}
}
func (h *refreshHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Hundreds of polls of fans who stay waiting arrive together, tick after tick, while
// the instance admits: the instance reads the event's figures at most once
// per tick window, plus once after its own admission drops them (a refresh
// already under way is not kept then), and no poll ever sees a fan's
// position grow, or one off by more than the admission that ran during the
// poll (the documented staleness: figures of the current tick window).
func TestQueue_Position_SingleFlightRefresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	const fans, pollers, rate, ticks = 1200, 300, 40, 12
	seqs := mustJoin(t, q, 1, fans)
	epoch := ""
	if p, err := q.Positions(ctx, queueEvent, map[int64]string{1: ""}); err != nil {
		t.Fatal(err)
	} else {
		epoch = p[1].Epoch
	}
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 1, 12, 0, 0, int(time.Second/2), time.UTC).UnixNano())
	q.Redis.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	hook := &refreshHook{}
	q.Redis.Client.AddHook(hook)

	var head atomic.Int64 // the sequence of the last fan admitted
	last := make([]int, fans+1)
	// poll has every poller ask for its fans' positions, all at once, and
	// checks each answer against the heads before and after the phase.
	poll := func(phase string, after int64, during func()) {
		before := head.Load()
		var start, all sync.WaitGroup
		start.Add(1)
		for g := range pollers {
			all.Go(func() {
				start.Wait()
				for range 3 {
					for a := int64(rate*ticks + g + 1); a <= fans; a += pollers {
						p, err := q.Position(ctx, queueEvent, a, boxoffice.QueuePlace{Epoch: epoch, Sequence: seqs[a]})
						if err != nil {
							t.Errorf("%s: Position(%d): %v", phase, a, err)
							return
						}
						switch p.Status {
						case boxoffice.QueueWaiting:
							if p.Position > int(seqs[a]-before) || p.Position < int(seqs[a]-after) ||
								(last[a] != 0 && p.Position > last[a]) {
								t.Errorf("%s: fan %d (sequence %d) at %d after %d, head %d..%d",
									phase, a, seqs[a], p.Position, last[a], before, after)
								return
							}
							last[a] = p.Position
						default:
							t.Errorf("%s: fan %d: %+v", phase, a, p)
							return
						}
					}
				}
			})
		}
		start.Done()
		if during != nil {
			during()
		}
		all.Wait()
	}
	s := admission(rate)
	for tick := int64(1); tick <= ticks; tick++ {
		// the tick starts (the tick window starts a quarter tick later): the
		// instance admits while polls are under way
		clock.Add(int64(time.Second / 2))
		n := hook.refreshes.Load()
		poll("tick start", head.Load()+rate, func() {
			r := mustAdmit(t, q, s, tick)
			for _, a := range r.Admitted {
				head.Store(max(head.Load(), seqs[a]))
			}
		})
		if got := hook.refreshes.Load() - n; got > 2 {
			t.Fatalf("tick %d: %d refreshes around the admission, want at most 2", tick, got)
		}
		// the next tick window: the figures are read once for everyone
		clock.Add(int64(time.Second / 2))
		n = hook.refreshes.Load()
		poll("tick window", head.Load(), nil)
		if got := hook.refreshes.Load() - n; got != 1 {
			t.Fatalf("tick %d: %d refreshes in a tick window, want 1", tick, got)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	if head.Load() != rate*ticks {
		t.Fatalf("head %d after %d ticks of %d", head.Load(), ticks, rate)
	}
}
