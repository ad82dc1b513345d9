package boxoffice

import (
	"context"
	"time"
)

// RateLimiter counts requests per key across all instances. Allow takes one
// request from key's allowance of perMinute requests a minute (with a burst
// of the same size) and returns 0 when it is allowed, or how long to wait
// before the next request would be.
type RateLimiter interface {
	Allow(ctx context.Context, key string, perMinute int) (retryAfter time.Duration, err error)
}
