package store

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Defaults of OutboxRelay.
const (
	DefaultOutboxStream = "stream:orders"
	DefaultOutboxBatch  = 100
	// DefaultOutboxMaxLen is about how many entries the stream keeps
	// (XADD MAXLEN ~): consumers that fall further behind miss the oldest.
	DefaultOutboxMaxLen = 100000
	// outboxLock is the PostgreSQL advisory lock that lets one relay at a
	// time publish, so that entries reach the stream in id order.
	outboxLock = 4242010
)

// OutboxRelay publishes the outbox's rows (written by the confirmation
// transaction) to a Redis Stream and marks them sent: at least once (a row
// published whose mark is lost is published again, so consumers dedupe on
// the "outbox_id" field) and in id order (one relay at a time, under a
// PostgreSQL advisory lock, publishes the oldest unsent rows first). A row
// whose transaction commits after a row with a larger id was published goes
// out with the next batch. Each entry has the fields outbox_id, topic,
// payload (the JSON) and created_at (RFC 3339).
type OutboxRelay struct {
	DB    *DB
	Redis *Redis
	// Stream is the stream's key without the Redis prefix
	// (DefaultOutboxStream when "").
	Stream string
	// Batch is how many rows one RelayOnce publishes at most
	// (DefaultOutboxBatch when 0).
	Batch int
	// MaxLen trims the stream to about this many entries
	// (DefaultOutboxMaxLen when 0).
	MaxLen int64
	// Logger receives failures of Run (slog.Default when nil).
	Logger *slog.Logger
}

// StreamKey returns the stream's full Redis key.
func (r *OutboxRelay) StreamKey() string {
	if r.Stream == "" {
		return r.Redis.Prefix + DefaultOutboxStream
	}
	return r.Redis.Prefix + r.Stream
}

// RelayOnce publishes up to Batch unsent rows, oldest first, with one XADD
// each in one pipeline, and marks them sent in the transaction that read
// them. It returns how many it published; 0 when another relay holds the
// lock. Errors: PostgreSQL's or Redis's (nothing is marked sent then).
func (r *OutboxRelay) RelayOnce(ctx context.Context) (int, error) {
	batch, maxLen := r.batch(), r.MaxLen
	if maxLen <= 0 {
		maxLen = DefaultOutboxMaxLen
	}
	var sent int
	err := r.DB.inTx(ctx, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, outboxLock).Scan(&locked); err != nil || !locked {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, topic, payload::text, created_at FROM outbox
			WHERE sent_at IS NULL ORDER BY id LIMIT $1`, batch)
		if err != nil {
			return err
		}
		type row struct {
			ID        int64
			Topic     string
			Payload   string
			CreatedAt time.Time
		}
		unsent, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
		if err != nil || len(unsent) == 0 {
			return err
		}
		pipe := r.Redis.Client.Pipeline()
		ids := make([]int64, len(unsent))
		for i, u := range unsent {
			ids[i] = u.ID
			pipe.XAdd(ctx, &redis.XAddArgs{
				Stream: r.StreamKey(), MaxLen: maxLen, Approx: true,
				Values: []any{"outbox_id", strconv.FormatInt(u.ID, 10), "topic", u.Topic, "payload", u.Payload,
					"created_at", u.CreatedAt.UTC().Format(time.RFC3339Nano)},
			})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("XADD: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE outbox SET sent_at = $2 WHERE id = ANY($1)`, ids, r.DB.Now()); err != nil {
			return err
		}
		sent = len(unsent)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("relay outbox: %w", err)
	}
	return sent, nil
}

// Run relays every interval (DefaultRelayInterval when 0), and again at once
// while full batches come, until ctx ends; failures are logged.
func (r *OutboxRelay) Run(ctx context.Context, interval time.Duration) {
	logger := r.Logger
	if logger == nil {
		logger = slog.Default()
	}
	RunEvery(ctx, orDefault(interval, DefaultRelayInterval), logger, "relay outbox", func(ctx context.Context) error {
		for {
			n, err := r.RelayOnce(ctx)
			if err != nil || n < r.batch() || ctx.Err() != nil {
				return err
			}
		}
	})
}

func (r *OutboxRelay) batch() int {
	if r.Batch > 0 {
		return r.Batch
	}
	return DefaultOutboxBatch
}
