package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the Redis side of the store: a client, a key prefix and a clock.
// Every key the store writes starts with Prefix, so that tests (and several
// deployments) can share one server. Keys of one event carry the hash tag
// {eventID} so that a Redis Cluster keeps them in one slot. Client is a
// *redis.Client for one server or a *redis.ClusterClient for a cluster.
type Redis struct {
	Client redis.UniversalClient
	Prefix string
	Now    func() time.Time
}

// ParseRedisURL checks REDIS_URL and returns the options of its client:
// redis://[user:password@]host:port/db names one server (one is non-nil),
// and redis://[user:password@]host:port?addr=host2:port2&addr=host3:port3
// names a Redis Cluster by its seeds (cluster is non-nil). A cluster has
// only database 0, so a URL that names a database (a path or db=) and a
// seed (addr=) mixes the forms and is refused. protocol=, if given, must be
// 2 or 3 (RESP2 or RESP3; go-redis would take any number silently). Errors
// name REDIS_URL.
func ParseRedisURL(rawURL string) (one *redis.Options, cluster *redis.ClusterOptions, err error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return nil, nil, errors.New("REDIS_URL: want redis://host:port/db for one server or redis://host:port?addr=host2:port2&addr=host3:port3 for a cluster")
	}
	q := u.Query()
	if p := q["protocol"]; len(p) > 0 && (len(p) > 1 || (p[0] != "2" && p[0] != "3")) {
		return nil, nil, fmt.Errorf("REDIS_URL: protocol=%s is not supported: want 2 (RESP2, the default) or 3 (RESP3)", strings.Join(p, ","))
	}
	if !q.Has("addr") {
		if one, err = redis.ParseURL(rawURL); err != nil {
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		return one, nil, nil
	}
	if (u.Path != "" && u.Path != "/") || q.Has("db") {
		return nil, nil, errors.New("REDIS_URL: a cluster URL (with addr= seeds) names no database: a Redis Cluster has only database 0, so drop the /db path and db=")
	}
	if cluster, err = redis.ParseClusterURL(rawURL); err != nil {
		return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return nil, cluster, nil
}

// CheckRedisPrefix refuses a REDIS_PREFIX with a brace: the store's keys
// carry hash tags ({eventID}), and a brace in the prefix would become the
// tag and put every key in one Redis Cluster slot (or split an event's keys).
func CheckRedisPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return fmt.Errorf("REDIS_PREFIX: must not contain { or } (they would become the Redis Cluster hash tag of every key), got %q", prefix)
	}
	return nil
}

// NewRedis returns a client of the Redis (or the Redis Cluster) at rawURL
// (ParseRedisURL), speaking RESP2 unless the URL sets protocol=, whose keys
// all start with prefix (CheckRedisPrefix). It does not connect: the client
// dials on first use and again after Redis comes back.
func NewRedis(rawURL, prefix string) (*Redis, error) {
	if err := CheckRedisPrefix(prefix); err != nil {
		return nil, err
	}
	one, cluster, err := ParseRedisURL(rawURL)
	if err != nil {
		return nil, err
	}
	// RESP2 unless the URL asks for another (?protocol=3): the store uses
	// none of what RESP3 adds (client-side caching; push frames on a
	// command's connection: the sessions' Pub/Sub has a connection of its
	// own), and on RESP3 go-redis looks for push notifications on every
	// command's connection.
	if one != nil && one.Protocol == 0 {
		one.Protocol = 2
	}
	if cluster != nil && cluster.Protocol == 0 {
		cluster.Protocol = 2
	}
	if cluster != nil {
		return &Redis{Client: redis.NewClusterClient(cluster), Prefix: prefix, Now: time.Now}, nil
	}
	return &Redis{Client: redis.NewClient(one), Prefix: prefix, Now: time.Now}, nil
}

// OpenRedis is NewRedis followed by a check that Redis answers within ctx
// (Ping).
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

// CheckSeeds pings each seed of a cluster URL on its own (a seed that does
// not answer within ctx is an error naming REDIS_URL and the seed), so that
// a typo in one seed is found at start-up rather than when the others are
// down, and asks each for CLUSTER INFO: a seed that is a Redis without
// cluster support (a one-server Redis named in the cluster form) is an
// error too, since every request would fail on it. A one-server URL has no
// seeds: nil.
func CheckSeeds(ctx context.Context, rawURL string) error {
	_, cluster, err := ParseRedisURL(rawURL)
	if err != nil || cluster == nil {
		return err
	}
	var errs []error
	for _, addr := range cluster.Addrs {
		c := redis.NewClient(&redis.Options{Addr: addr, Username: cluster.Username, Password: cluster.Password, TLSConfig: cluster.TLSConfig, MaxRetries: -1})
		if err := c.Ping(ctx).Err(); err != nil {
			errs = append(errs, fmt.Errorf("REDIS_URL: the cluster seed %s does not answer: %w", addr, err))
		} else if err := c.ClusterInfo(ctx).Err(); err != nil {
			errs = append(errs, fmt.Errorf("REDIS_URL: the cluster seed %s is not a Redis Cluster node (%w); name one server as redis://host:port/db", addr, err))
		}
		c.Close()
	}
	return errors.Join(errs...)
}

// Close closes the client.
func (r *Redis) Close() error { return r.Client.Close() }

// AutoPipeline returns go-redis's automatic pipelining of r's client (one
// server or a Redis Cluster) with its defaults for blocking calls: one
// ordered stream of batches, each written once the previous one was
// answered. Every command called on it waits for its own reply, as on the
// client; commands called at once share a write and a read. It is the
// client's one autopipeliner, stopped by Close. go-redis marks the API
// experimental (v9.23): the queue's hot scripts use it (Queue.Pipe).
func (r *Redis) AutoPipeline() (*redis.AutoPipeliner, error) {
	p, err := r.Client.AutoPipeline()
	if err != nil {
		return nil, fmt.Errorf("redis autopipelining: %w", err)
	}
	return p, nil
}

// Key returns the prefixed key for the formatted name, as Prefix +
// fmt.Sprintf(format, args...). The verbs of keys, %d of an int64 or an int
// and %s of a string, are written without fmt, in one allocation: every
// hot request builds several keys (a hold 11, a join 8); any other verb or
// argument goes through fmt.
func (r *Redis) Key(format string, args ...any) string {
	var b strings.Builder
	b.Grow(len(r.Prefix) + len(format) + 16*len(args))
	b.WriteString(r.Prefix)
	rest := args
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		if i+1 == len(format) || len(rest) == 0 || !appendKeyArg(&b, format[i+1], rest[0]) {
			return r.Prefix + fmt.Sprintf(format, args...)
		}
		rest, i = rest[1:], i+1
	}
	if len(rest) > 0 {
		return r.Prefix + fmt.Sprintf(format, args...)
	}
	return b.String()
}

// appendKeyArg writes v as the verb of Key's format would and reports
// whether it did: only %d of an int64 or an int and %s of a string.
func appendKeyArg(b *strings.Builder, verb byte, v any) bool {
	var num [20]byte
	switch v := v.(type) {
	case int64:
		if verb == 'd' {
			b.Write(strconv.AppendInt(num[:0], v, 10))
			return true
		}
	case int:
		if verb == 'd' {
			b.Write(strconv.AppendInt(num[:0], int64(v), 10))
			return true
		}
	case string:
		if verb == 's' {
			b.WriteString(v)
			return true
		}
	}
	return false
}

// Ping checks that Redis answers. On a cluster every master must answer
// PING and report cluster_state:ok (CLUSTER INFO): with any slot unserved,
// some events' requests would fail.
func (r *Redis) Ping(ctx context.Context) error {
	cc, ok := r.Client.(*redis.ClusterClient)
	if !ok {
		return r.Client.Ping(ctx).Err()
	}
	var mu sync.Mutex
	var errs []error
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		info, err := node.ClusterInfo(ctx).Result()
		if err == nil && !strings.Contains(info, "cluster_state:ok") {
			err = errors.New("cluster_state is not ok")
		}
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("master %s: %w", node.Options().Addr, err))
			mu.Unlock()
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// ForEachMaster runs fn on the one server, or on every master of a cluster
// at once: commands without keys (SCAN, FLUSHALL, TIME) see one node only.
func (r *Redis) ForEachMaster(ctx context.Context, fn func(ctx context.Context, node *redis.Client) error) error {
	switch c := r.Client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	default:
		return fmt.Errorf("redis client %T: neither one server nor a cluster", c)
	}
}

// Time returns Redis's clock from one place: the server, or on a cluster
// the master of the admitter's clock key, so that ticks are numbered from
// one clock however many masters there are.
func (r *Redis) Time(ctx context.Context) (time.Time, error) {
	if cc, ok := r.Client.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, r.Key("admit:clock"))
		if err != nil {
			return time.Time{}, fmt.Errorf("the master of the clock: %w", err)
		}
		return node.Time(ctx).Result()
	}
	return r.Client.Time(ctx).Result()
}

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
