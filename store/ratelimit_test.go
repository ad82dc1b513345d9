package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// Many instances' worth of concurrent requests on one key: exactly the burst
// gets through, and the rest are told how long to wait.
func TestRateLimiter_Allow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := storetest.MustOpenRedis(t)
	l := store.NewRateLimiter(r)
	other := store.NewRateLimiter(storetest.MustOpenRedis(t)) // another prefix: its own allowance
	for round := range 5 {
		key := "login:ip:192.0.2." + string(rune('0'+round))
		var allowed, refused atomic.Int32
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				wait, err := l.Allow(ctx, key, 30)
				switch {
				case err != nil:
					t.Errorf("Allow: %v", err)
				case wait == 0:
					allowed.Add(1)
				default:
					refused.Add(1)
				}
			})
		}
		wg.Wait()
		if allowed.Load() != 30 || refused.Load() != 170 {
			t.Fatalf("round %d: %d allowed, %d refused; want 30 and 170", round, allowed.Load(), refused.Load())
		}
		if wait, err := other.Allow(ctx, key, 30); err != nil || wait != 0 {
			t.Fatalf("the same key under another prefix: wait %v, %v; want allowed", wait, err)
		}
	}
}
