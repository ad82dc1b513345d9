package store

import (
	"context"
	"fmt"
	"strconv"
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

// NewRedis returns a client of the Redis at rawURL (redis://host:port/db)
// whose keys all start with prefix. It does not connect: the client dials on
// first use and again after Redis comes back.
func NewRedis(rawURL, prefix string) (*Redis, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	return &Redis{Client: redis.NewClient(opt), Prefix: prefix, Now: time.Now}, nil
}

// OpenRedis is NewRedis followed by a check that Redis answers within ctx.
func OpenRedis(ctx context.Context, rawURL, prefix string) (*Redis, error) {
	r, err := NewRedis(rawURL, prefix)
	if err != nil {
		return nil, err
	}
	if err := r.Ping(ctx); err != nil {
		r.Close()
		return nil, fmt.Errorf("ping Redis: %w", err)
	}
	return r, nil
}

// Close closes the client.
func (r *Redis) Close() error { return r.Client.Close() }

// Key returns the prefixed key for the formatted name.
func (r *Redis) Key(format string, args ...any) string {
	return r.Prefix + fmt.Sprintf(format, args...)
}

// Ping checks that Redis answers.
func (r *Redis) Ping(ctx context.Context) error { return r.Client.Ping(ctx).Err() }

// entryKey is entry:{e}:<account>, the account's entry token for the event,
// "<token>|<session key>", expiring with the token (store.Queue). The hold
// scripts read it too, to check the entry in the same step as the action.
func (r *Redis) entryKey(eventID, accountID int64) string {
	return r.entryPrefix(eventID) + strconv.FormatInt(accountID, 10)
}

// entryPrefix is what entryKey puts before the account id.
func (r *Redis) entryPrefix(eventID int64) string { return r.Key("entry:{%d}:", eventID) }

// entryLiveKey is entry:live:{e}, the sorted set account -> entry token
// expiry (Unix ms) of every token issued for the event (store.Queue).
func (r *Redis) entryLiveKey(eventID int64) string { return r.Key("entry:live:{%d}", eventID) }

// boughtKey is bought:{e}, the hash account id -> tickets bought of the
// event, Redis's copy of PostgreSQL's counts (store.Holds loads it).
func (r *Redis) boughtKey(eventID int64) string { return r.Key("bought:{%d}", eventID) }
