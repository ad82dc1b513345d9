package storetest_test

import (
	"context"
	"testing"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// The private servers start, stop and start again: what the outage tests of
// other packages rely on.
func TestPrivateServers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	r := storetest.StartRedis(t)
	rdb, err := store.OpenRedis(ctx, r.URL, "p:")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := rdb.Client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	if err := rdb.Ping(ctx); err == nil {
		t.Fatal("Ping succeeded with the private Redis stopped")
	}
	r.Start()
	if n, err := rdb.Client.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after a restart EXISTS k = %d, %v; want 0 (nothing persisted)", n, err)
	}

	p := storetest.StartPostgres(t)
	db := p.MustOpenDB()
	p.Stop()
	if err := db.Ping(ctx); err == nil {
		t.Fatal("Ping succeeded with the private PostgreSQL stopped")
	}
	p.Start()
	db.Pool.Reset() // the pool's other idle connections died with the server
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM account`).Scan(&n); err != nil {
		t.Fatalf("query after the restart: %v", err)
	}
}

// Stopping the private PostgreSQL is a crash of the server, not of the
// machine: what was committed just before is there after Start, as after a
// real server's crash.
func TestPrivatePostgres_StopKeepsCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := storetest.StartPostgres(t)
	db, err := store.OpenDB(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE kept AS SELECT 1 AS n`); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	p.Start()
	db.Pool.Reset() // the pool's connections died with the server
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM kept`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after a commit and a crash: %d rows, %v; want the committed row", n, err)
	}
}
