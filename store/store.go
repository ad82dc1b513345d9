// Package store keeps boxoffice's state: PostgreSQL is the truth (accounts,
// venues, events, orders, payments, sold seats, the outbox) and Redis the fast,
// expiring state (queue, entry tokens, seat holds, the sold-seat cache). The
// rules that must hold under concurrency live here, in a PostgreSQL
// transaction backed by a constraint or in a Lua script.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/redis/go-redis/v9"
)

// DB is the PostgreSQL side of the store: a connection pool and a clock.
// It is safe for concurrent use.
type DB struct {
	Pool *pgxpool.Pool
	// Read, when not nil, is a pool on a streaming replica
	// (DATABASE_READ_URL) for the lists that may be a moment late: the
	// home page's and the admin's lists of events and venues, and a fan's
	// orders (/me/orders). Everything else, and every page right after a
	// write (an order's own page after its payment), reads Pool.
	Read *pgxpool.Pool
	// Now returns the current time; tests replace it with a fixed clock.
	Now func() time.Time
}

// reader is the pool for reads that may be a moment late: Read, or Pool
// without a replica.
func (db *DB) reader() *pgxpool.Pool {
	if db.Read != nil {
		return db.Read
	}
	return db.Pool
}

// OpenReadPool connects to the replica at dsn (DATABASE_READ_URL) as
// db.Read and checks that it answers within ctx and is in recovery (a
// replica: writes there would fail, and a primary named by mistake would
// hide the mistake). Errors name DATABASE_READ_URL.
func (db *DB) OpenReadPool(ctx context.Context, dsn string) error {
	pool, err := newPool(ctx, dsn)
	if err != nil {
		return fmt.Errorf("DATABASE_READ_URL: %w", err)
	}
	var replica bool
	if err := pool.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&replica); err != nil {
		pool.Close()
		return fmt.Errorf("DATABASE_READ_URL: %w", err)
	}
	if !replica {
		pool.Close()
		return errors.New("DATABASE_READ_URL: the server is not a replica (pg_is_in_recovery() is false): name a streaming replica of DATABASE_URL, or leave it empty")
	}
	db.Read = pool
	return nil
}

// OpenDB connects to the database at dsn (a postgres:// URL), creating the
// database first if it does not exist, and checks that it answers within ctx.
// It does not migrate: call Migrate.
func OpenDB(ctx context.Context, dsn string) (*DB, error) {
	if err := CreateDatabase(ctx, dsn); err != nil {
		return nil, err
	}
	pool, err := newPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &DB{Pool: pool, Now: time.Now}, nil
}

// Close closes the pools, waiting for connections in use to be released.
func (db *DB) Close() {
	db.Pool.Close()
	if db.Read != nil {
		db.Read.Close()
	}
}

// newPool opens a pool on dsn and checks that it answers within ctx.
func newPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	return OpenPool(ctx, dsn)
}

// OpenPool opens a pool on dsn (a postgres:// URL; pool_max_conns in it
// overrides the default of 8 connections, pool_min_conns the default of
// keeping all of them open) and checks that it answers within ctx. Close it
// when done.
func OpenPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	// A server that went away must not hang requests: connecting gives up after
	// 5 s (unless connect_timeout says otherwise), and requests answer 503. 8
	// connections: measured (docs/performance.md, "Where the paying phase
	// waits", "The store's work per paid order"), a paid order needs 4
	// acquisitions of short batches, and on 2 cores 16 connections did worse
	// than 8 or 4 (more backends waiting for the same cores, each connection
	// held longer); 8 leaves room for the slower reads (an event's seat counts)
	// beside the paying path. pool_max_conns in the URL overrides this.
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = 8
	}
	// Every connection is opened at start-up (in the background) and kept:
	// a sale's first requests, and those after a quiet spell, find them
	// ready instead of each paying for a connection (TCP, authentication,
	// a TLS attempt without sslmode) while the rest queue behind it.
	if !strings.Contains(dsn, "pool_min_conns") {
		cfg.MinConns = cfg.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return pool, nil
}

// Migrate applies the embedded migrations that have not run yet. goose takes a
// PostgreSQL advisory lock, so instances starting together migrate once.
func (db *DB) Migrate(ctx context.Context) error {
	return db.migrate(ctx, func(ctx context.Context, p *goose.Provider) error {
		_, err := p.Up(ctx)
		return err
	})
}

// migrate runs up on a goose provider of the embedded migrations.
func (db *DB) migrate(ctx context.Context, up func(context.Context, *goose.Provider) error) error {
	sqlDB := stdlib.OpenDBFromPool(db.Pool)
	defer sqlDB.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS, goose.WithSessionLocker(locker),
		goose.WithGoMigrations(migrations.Go()...))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if err := up(ctx, p); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// CreateDatabase creates the database named in dsn if it does not exist, by
// connecting to the server's "postgres" database. Creating one that another
// process created a moment earlier is not an error.
func CreateDatabase(ctx context.Context, dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return fmt.Errorf("DATABASE_URL names no database")
	}
	admin := *u
	admin.Path = "/postgres"
	q := admin.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") { // pgxpool's settings mean nothing to one connection
			q.Del(k)
		}
	}
	admin.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %q: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if pgErrCode(err) == "42P04" { // duplicate_database
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %q: %w", name, err)
	}
	return nil
}

// pgErrCode returns the SQLSTATE of a PostgreSQL error, or "".
func pgErrCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// pgConstraint returns the constraint a PostgreSQL error names, or "".
func pgConstraint(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// Unreachable reports whether err says that PostgreSQL or Redis could not be
// reached or went away (boxoffice.Unreachable), counting pgx's error for a
// pooled connection that the server dropped (pgconn.ErrConnClosed, met in the
// moments after PostgreSQL went away), which carries no network error, and a
// Redis Cluster's CLUSTERDOWN and TRYAGAIN (clusterDown).
func Unreachable(err error) bool {
	return boxoffice.Unreachable(err) || errors.Is(err, pgconn.ErrConnClosed) || clusterDown(err)
}

// clusterDown reports whether err is a Redis Cluster's refusal to serve
// while it is not whole (CLUSTERDOWN: a master is gone and its slots are not
// served) or while a slot moves (TRYAGAIN): an outage, not a bug.
func clusterDown(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "CLUSTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN")
}

// notFound maps pgx.ErrNoRows to an ENOTFOUND error saying id; other
// errors pass through.
func notFound(err error, id boxoffice.MsgID) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return boxoffice.NewError(boxoffice.ENOTFOUND, id)
	}
	return err
}

// inTx runs fn in a transaction, committing if it returns nil and rolling back
// otherwise. Exported methods open transactions; unexported helpers take the
// pgx.Tx so that transactions compose.
func (db *DB) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db.Pool, fn)
}

// inBatchTx runs a transaction that fn sends as pgx batches on one
// connection: fn's first batch starts with BEGIN and its last ends with
// COMMIT (queued, not sent alone), so that the transaction costs one round
// trip per batch, and none of its statements waits in Go for another's
// answer. If fn fails, or returns with the transaction still open (a
// statement failed, which skips the rest of its batch, COMMIT included),
// the transaction is rolled back and the connection released.
func (db *DB) inBatchTx(ctx context.Context, fn func(c *pgx.Conn) error) error {
	pc, err := db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release()
	err = fn(pc.Conn())
	if pc.Conn().PgConn().TxStatus() != 'I' && !pc.Conn().IsClosed() {
		if _, rerr := pc.Conn().Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil && err == nil {
			err = fmt.Errorf("roll back: %w", rerr)
		}
		if err == nil {
			err = errors.New("the transaction was left open")
		}
	}
	return err
}

// sendBatch sends b on c and hands its results to read, then closes them
// (reading what read left unread): the first error wins.
func sendBatch(ctx context.Context, c batcher, b *pgx.Batch, read func(br pgx.BatchResults) error) error {
	br := c.SendBatch(ctx, b)
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// Ping checks that PostgreSQL answers.
func (db *DB) Ping(ctx context.Context) error { return db.Pool.Ping(ctx) }
