package checkouttest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Trips counts what the store asks of PostgreSQL on a pool: round trips
// (each Exec, Query, QueryRow and SendBatch, BEGIN and COMMIT included; a
// batch is one), statements (each Exec, Query and QueryRow, and each
// statement of a batch that ran), connections acquired, and adds up how
// long they were held (from Acquire to Release). Install it with
// Env.CountTrips.
type Trips struct {
	trips, statements, acquires, heldNanos atomic.Int64

	mu    sync.Mutex
	since map[*pgx.Conn]time.Time
}

// TripsSnapshot is what a Trips counted so far.
type TripsSnapshot struct {
	RoundTrips, Statements, Acquires int64
	Held                             time.Duration
}

// Snapshot returns the counts so far.
func (t *Trips) Snapshot() TripsSnapshot {
	return TripsSnapshot{RoundTrips: t.trips.Load(), Statements: t.statements.Load(), Acquires: t.acquires.Load(), Held: time.Duration(t.heldNanos.Load())}
}

// Sub returns the counts between an earlier snapshot and s.
func (s TripsSnapshot) Sub(earlier TripsSnapshot) TripsSnapshot {
	return TripsSnapshot{
		RoundTrips: s.RoundTrips - earlier.RoundTrips, Statements: s.Statements - earlier.Statements,
		Acquires: s.Acquires - earlier.Acquires, Held: s.Held - earlier.Held,
	}
}

func (t *Trips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.trips.Add(1)
	t.statements.Add(1)
	return ctx
}

func (t *Trips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t *Trips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.trips.Add(1)
	return ctx
}

func (t *Trips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	t.statements.Add(1)
}

func (t *Trips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (t *Trips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	t.trips.Add(1)
	return ctx
}

func (t *Trips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

func (t *Trips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	t.trips.Add(1)
	return ctx
}

func (t *Trips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (t *Trips) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	return ctx
}

func (t *Trips) TraceAcquireEnd(_ context.Context, _ *pgxpool.Pool, d pgxpool.TraceAcquireEndData) {
	if d.Err != nil {
		return
	}
	t.acquires.Add(1)
	t.mu.Lock()
	t.since[d.Conn] = time.Now()
	t.mu.Unlock()
}

func (t *Trips) TraceRelease(_ *pgxpool.Pool, d pgxpool.TraceReleaseData) {
	t.mu.Lock()
	at, ok := t.since[d.Conn]
	delete(t.since, d.Conn)
	t.mu.Unlock()
	if ok {
		t.heldNanos.Add(int64(time.Since(at)))
	}
}

// CountTrips moves the env's store (its Holds, Orders and Service, the
// webhook's included) onto a pool of its own on the same database whose
// round trips and connections the returned Trips counts, of conns
// connections (all opened at once; 0: as many as the env's pool); the
// sandbox PG keeps the env's pool, so its statements are not counted. Call
// it before anything else of the env.
func (env *Env) CountTrips(tb testing.TB, conns int32) *Trips {
	tb.Helper()
	cfg := env.DB.Pool.Config()
	t := &Trips{since: map[*pgx.Conn]time.Time{}}
	cfg.ConnConfig.Tracer = t
	if conns > 0 {
		cfg.MaxConns, cfg.MinConns = conns, conns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	db := &store.DB{Pool: pool, Now: env.DB.Now}
	holds, err := store.NewHolds(db, env.R, nil)
	if err != nil {
		tb.Fatal(err)
	}
	holds.MapMaxAge = 0
	env.Holds = holds
	env.Orders = &store.Orders{DB: db, Holds: holds, TicketSecret: env.Orders.TicketSecret, Logger: env.Orders.Logger}
	env.Checkout = env.NewService(env.Orders, env.Checkout.PG)
	return t
}
