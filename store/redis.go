package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the Redis side of the store: a client, a key prefix and a clock.
// Every key the store writes starts with Prefix, so that tests (and several
// deployments) can share one server. Keys of one event carry the hash tag
// {eventID} so that a Redis Cluster keeps them in one slot.
type Redis struct {
	Client *redis.Client
	Prefix string
	Now    func() time.Time
}

// OpenRedis connects to the Redis at rawURL (redis://host:port/db) and checks
// that it answers within ctx. prefix is prepended to every key.
func OpenRedis(ctx context.Context, rawURL, prefix string) (*Redis, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("ping Redis: %w", err)
	}
	return &Redis{Client: c, Prefix: prefix, Now: time.Now}, nil
}

// Close closes the client.
func (r *Redis) Close() error { return r.Client.Close() }

// Key returns the prefixed key for the formatted name.
func (r *Redis) Key(format string, args ...any) string {
	return r.Prefix + fmt.Sprintf(format, args...)
}
