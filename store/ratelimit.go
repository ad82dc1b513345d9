package store

import (
	"context"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/go-redis/redis_rate/v10"
)

var _ boxoffice.RateLimiter = (*RateLimiter)(nil)

// RateLimiter is a rate limiter shared by every instance, kept in Redis with
// the generic cell rate algorithm of github.com/go-redis/redis_rate (one
// EVALSHA per request; keys "rate:<prefix>ratelimit:<key>" that expire by
// themselves).
type RateLimiter struct {
	Redis   *Redis
	limiter *redis_rate.Limiter
}

// NewRateLimiter returns a limiter on r.
func NewRateLimiter(r *Redis) *RateLimiter {
	return &RateLimiter{Redis: r, limiter: redis_rate.NewLimiter(r.Client)}
}

// Allow takes one request from key's allowance of perMinute a minute (burst
// perMinute) and returns 0, or the wait before the next allowed request.
// Errors: Redis's, wrapped.
func (l *RateLimiter) Allow(ctx context.Context, key string, perMinute int) (time.Duration, error) {
	res, err := l.limiter.Allow(ctx, l.Redis.Key("ratelimit:%s", key), redis_rate.PerMinute(perMinute))
	if err != nil {
		return 0, fmt.Errorf("rate limit %s: %w", key, err)
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return res.RetryAfter, nil
}
