// Package storetest gives tests their own real PostgreSQL database and Redis
// key prefix, so that tests of every package run in parallel against the
// services of the machine (DATABASE_URL and REDIS_URL, or the defaults).
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/migrations"
	"github.com/boxoffice/boxoffice/store"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Defaults match the development machines and CONTRACT.md, with
// sslmode=disable for the local server (else pgx tries TLS first on every
// new connection).
const (
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/boxoffice?sslmode=disable"
	DefaultRedisURL    = "redis://127.0.0.1:6379/0"
)

// DatabaseURL returns the server URL tests use: $DATABASE_URL or the default.
func DatabaseURL() string {
	if v := os.Getenv("DATABASE_URL"); v != "" {
		return v
	}
	return DefaultDatabaseURL
}

// RedisURL returns the Redis URL tests use: $REDIS_URL or the default.
func RedisURL() string {
	if v := os.Getenv("REDIS_URL"); v != "" {
		return v
	}
	return DefaultRedisURL
}

// AtOnce runs fn(0) to fn(n-1) in n goroutines released at the same moment,
// so that they race as hard as the machine allows, and returns when all
// have returned. Callers collect results into slices indexed by i.
func AtOnce(n int, fn func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// ChaosLong reports whether the long versions of the chaos tests are asked
// for (BOXOFFICE_CHAOS=long, as `make chaos` sets): more fans, more rounds.
func ChaosLong() bool { return os.Getenv("BOXOFFICE_CHAOS") == "long" }

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// NewDatabaseURL creates a fresh, migrated database for tb, dropped when tb
// ends, and returns its URL. The first call in a process migrates a template
// database named after a hash of the migrations (shared by all test processes,
// created under an advisory lock); every database is a copy of it.
func NewDatabaseURL(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	templateOnce.Do(func() { templateName, templateErr = migrateTemplate(ctx) })
	if templateErr != nil {
		tb.Fatalf("template database: %v", templateErr)
	}
	name := "boxoffice_test_" + randomHex(8)
	conn := adminConn(ctx, tb)
	defer conn.Close(ctx)
	var err error
	for range 50 { // CREATE DATABASE fails while another backend copies the template
		_, err = conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, templateName))
		if err == nil || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := adminConn(ctx, tb)
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			tb.Errorf("drop test database %s: %v", name, err)
		}
	})
	return withPool(withDatabase(DatabaseURL(), name))
}

// withPool caps the pool of a test database at 4 connections, opened as
// the test needs them (pool_min_conns=0, where the app opens all of its at
// start-up): tests run in parallel against one server whose
// max_connections is often 100.
func withPool(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(fmt.Sprintf("DATABASE_URL %q: %v", dsn, err))
	}
	q := u.Query()
	q.Set("pool_max_conns", "4")
	q.Set("pool_min_conns", "0")
	u.RawQuery = q.Encode()
	return u.String()
}

// MustOpenDB opens a fresh, migrated database for tb (see NewDatabaseURL),
// closed when tb ends.
func MustOpenDB(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.OpenDB(context.Background(), NewDatabaseURL(tb))
	if err != nil {
		tb.Fatalf("open test database: %v", err)
	}
	tb.Cleanup(db.Close)
	return db
}

// Keys returns the keys that match pattern on the one server or on every
// master of a cluster (SCAN on each).
func Keys(ctx context.Context, r *store.Redis, pattern string) ([]string, error) {
	var mu sync.Mutex
	var keys []string
	err := r.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		var mine []string
		for iter.Next(ctx) {
			mine = append(mine, iter.Val())
		}
		mu.Lock()
		keys = append(keys, mine...)
		mu.Unlock()
		return iter.Err()
	})
	return keys, err
}

// DeleteKeys deletes keys with one UNLINK per key, pipelined: on a cluster
// they may live in many slots, which one multi-key command refuses.
func DeleteKeys(ctx context.Context, r *store.Redis, keys []string) error {
	_, err := r.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Unlink(ctx, k)
		}
		return nil
	})
	return err
}

// Masters returns the addresses of the Redis Cluster's masters, sorted, or
// the one server's address.
func Masters(ctx context.Context, r *store.Redis) ([]string, error) {
	var mu sync.Mutex
	var addrs []string
	err := r.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
		mu.Lock()
		addrs = append(addrs, node.Options().Addr)
		mu.Unlock()
		return nil
	})
	slices.Sort(addrs)
	return addrs, err
}

// MasterOf returns the address of the master that serves key (the one
// server's address when r is not a cluster).
func MasterOf(ctx context.Context, r *store.Redis, key string) (string, error) {
	switch c := r.Client.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return "", err
		}
		return node.Options().Addr, nil
	case *redis.Client:
		return c.Options().Addr, nil
	default:
		return "", fmt.Errorf("redis client %T: neither one server nor a cluster", c)
	}
}

// FlushAll empties the one server or every master of a cluster, as Redis
// losing its data does.
func FlushAll(ctx context.Context, r *store.Redis) error {
	return r.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		return node.FlushAll(ctx).Err()
	})
}

// MustOpenRedis connects to the test Redis with a key prefix of its own
// ("test:<random>:"); the keys under it are deleted when tb ends.
func MustOpenRedis(tb testing.TB) *store.Redis {
	tb.Helper()
	r, err := store.OpenRedis(context.Background(), RedisURL(), NewRedisPrefix())
	if err != nil {
		tb.Fatalf("open test Redis: %v", err)
	}
	tb.Cleanup(func() {
		ctx := context.Background()
		keys, err := Keys(ctx, r, r.Prefix+"*")
		if err != nil {
			tb.Logf("list the test's Redis keys: %v", err)
		}
		if err := DeleteKeys(ctx, r, keys); err != nil {
			tb.Logf("delete the test's Redis keys: %v", err)
		}
		r.Close()
	})
	return r
}

// NewRedisPrefix returns a key prefix no other test uses.
func NewRedisPrefix() string { return "test:" + randomHex(6) + ":" }

func migrateTemplate(ctx context.Context) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	name := "boxoffice_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16]
	conn, err := pgx.Connect(ctx, withDatabase(DatabaseURL(), "postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	// One process migrates; the others wait on the lock, then find it done.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(4242001)"); err != nil {
		return "", err
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(4242001)")
	var ready bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)`, name).Scan(&ready)
	if err != nil || ready {
		return name, err
	}
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return "", err
	}
	db, err := store.OpenDB(ctx, withDatabase(DatabaseURL(), name))
	if err != nil {
		return "", err
	}
	err = db.Migrate(ctx)
	db.Close()
	if err != nil {
		return "", err
	}
	_, err = conn.Exec(ctx, "ALTER DATABASE "+name+" WITH is_template true")
	return name, err
}

func adminConn(ctx context.Context, tb testing.TB) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(ctx, withDatabase(DatabaseURL(), "postgres"))
	if err != nil {
		tb.Fatalf("connect to PostgreSQL: %v", err)
	}
	return conn
}

func withDatabase(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(fmt.Sprintf("DATABASE_URL %q: %v", dsn, err))
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
