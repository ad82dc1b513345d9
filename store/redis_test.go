package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/redis/go-redis/v9"
)

// On a Redis Cluster, Ping (what /readyz asks) answers nil while every
// master answers and says cluster_state:ok, and an error as soon as one
// master is gone: some events' keys would be out of reach.
func TestRedis_PingCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := storetest.StartCluster(t)
	r, err := store.OpenRedis(ctx, c.URL, storetest.NewRedisPrefix())
	if err != nil {
		t.Fatalf("OpenRedis(cluster) = %v", err)
	}
	defer r.Close()
	if err := store.CheckSeeds(ctx, c.URL); err != nil {
		t.Fatalf("CheckSeeds(every seed up) = %v", err)
	}
	if _, err := r.Time(ctx); err != nil {
		t.Fatalf("Time = %v", err)
	}

	c.StopNode(2)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := r.Ping(ctx); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Ping answers nil 30 s after a master stopped, want an error")
		}
	}
	// Once the others see the master gone, the cluster refuses every key
	// (CLUSTERDOWN), which the handlers answer 503 like an outage.
	alive := ""
	for i := 0; alive == ""; i++ {
		k := r.Key("probe:{%d}", i)
		if on, err := storetest.MasterOf(ctx, r, k); err == nil && strings.HasSuffix(on, ":"+strconv.Itoa(c.Ports[0])) {
			alive = k
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := r.Client.Get(ctx, alive).Err()
		if err != nil && !errors.Is(err, redis.Nil) {
			if !store.Unreachable(err) {
				t.Fatalf("GET on a live master of a broken cluster = %v, want an error store.Unreachable counts", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster still serves keys 30 s after a master stopped, want CLUSTERDOWN")
		}
	}
	seeds, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = store.CheckSeeds(seeds, c.URL)
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") || !strings.Contains(err.Error(), ":"+strconv.Itoa(c.Ports[2])) {
		t.Fatalf("CheckSeeds(a seed down) = %v, want an error naming REDIS_URL and the seed", err)
	}
}

// A one-server Redis named in the cluster form answers PING but has no
// cluster support: CheckSeeds refuses it at start-up with a sentence that
// names REDIS_URL and the seed, instead of a binary that starts and then
// fails every request.
func TestCheckSeeds_NotACluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	one, err := redis.ParseURL(storetest.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	err = store.CheckSeeds(ctx, "redis://"+one.Addr+"?addr="+one.Addr)
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") || !strings.Contains(err.Error(), one.Addr) || !strings.Contains(err.Error(), "not a Redis Cluster node") {
		t.Fatalf("CheckSeeds(a one-server Redis in the cluster form) = %v, want an error naming REDIS_URL, the seed and why", err)
	}
}

func TestNewRedis_Bad(t *testing.T) {
	for _, tt := range []struct{ url, prefix, want string }{
		{"redis://127.0.0.1:6379/0?addr=127.0.0.1:6380", "bo:", "REDIS_URL: a cluster URL"},
		{"redis://127.0.0.1:6379?addr=127.0.0.1:6380&db=1", "bo:", "REDIS_URL: a cluster URL"},
		{"http://127.0.0.1:6379", "bo:", "REDIS_URL: want"},
		{"redis://127.0.0.1:6379/0", "bo:{1}:", "REDIS_PREFIX"},
	} {
		if _, err := store.NewRedis(tt.url, tt.prefix); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewRedis(%q, %q) = %v, want an error with %q", tt.url, tt.prefix, err, tt.want)
		}
	}
}

// Key writes %d and %s itself and leaves every other format to fmt: either
// way the key is Prefix + fmt.Sprintf(format, args...).
func TestRedis_Key(t *testing.T) {
	r := &store.Redis{Prefix: "t1:"}
	for _, c := range []struct {
		format string
		args   []any
	}{
		{"queue:{%d}", []any{int64(42)}},
		{"seat:lock:{%d}:%s", []any{int64(-7), "A-12-7"}},
		{"best:{%d}:%s:%d", []any{int64(9_000_000_000), "VIP", 4}},
		{"admit:clock", nil},
		{"admit:lock:*", nil},
		{"hold:{%d}:%d", []any{int64(1), int32(2)}},
		{"order:%v", []any{"x"}},
		{"order:%x", []any{int64(255)}},
		{"ratelimit:%s", []any{int64(3)}},
		{"too:%d:%d", []any{int64(1)}},
		{"extra:%d", []any{int64(1), "y"}},
		{"tail:%", []any{int64(1)}},
		{"pct:%%d", []any{int64(1)}},
	} {
		if got, want := r.Key(c.format, c.args...), r.Prefix+fmt.Sprintf(c.format, c.args...); got != want {
			t.Errorf("Key(%q, %v) = %q, want %q", c.format, c.args, got, want)
		}
	}
}
