package store

import (
	"context"

	"github.com/pressly/goose/v3"
	"github.com/redis/go-redis/v9"
)

// MigrateUpTo applies the embedded migrations up to version and no
// further, so that a test can write rows as an older version had them.
func MigrateUpTo(ctx context.Context, db *DB, version int64) error {
	return db.migrate(ctx, func(ctx context.Context, p *goose.Provider) error {
		_, err := p.UpTo(ctx, version)
		return err
	})
}

// SetBeforeCommit makes the confirmation transaction call f just before it
// commits, so that tests can hold it open.
func SetBeforeCommit(s *Orders, f func(orderID, paymentKey string)) { s.beforeCommit = f }

// SetAfterSoldRead makes each load of h's sold-seat cache call f between its
// PostgreSQL read and its write to Redis.
func SetAfterSoldRead(h *Holds, f func()) { h.afterSoldRead = f }

// LoadTimeout is how long a load of the sold-seat cache may take.
const LoadTimeout = loadTimeout

// SetBeforeRelease makes ExpireOrders call f between its read of a due
// order and the release of the order's holds.
func SetBeforeRelease(s *Orders, f func(orderID string)) { s.beforeRelease = f }

// SearchQuery is the statement SearchOrders runs for a search, and its
// arguments, for tests that EXPLAIN it.
var SearchQuery = searchQuery

// Unsell takes a refund's seats out of Redis's sold-seat copy, as
// Refunds.Apply does once PostgreSQL committed the refund.
func Unsell(ctx context.Context, h *Holds, eventID, accountID int64, labels []string) error {
	return h.unsell(ctx, eventID, accountID, labels)
}

// IsPositionsRead reports whether cmd is a read of queue positions
// (queue_positions.lua, by its hash or, the first time, its source) that
// Redis answered.
func IsPositionsRead(cmd redis.Cmder) bool {
	a := cmd.Args()
	if cmd.Err() != nil || len(a) < 2 {
		return false
	}
	switch cmd.Name() {
	case "evalsha_ro":
		return a[1] == queuePositionsScript.Hash()
	case "eval_ro":
		return a[1] == queuePositionsLua
	}
	return false
}

// BestRuns returns the runs of the event's grade, best first (each its
// labels in their order along the row), as best available reads them.
func BestRuns(ctx context.Context, h *Holds, eventID int64, grade string) ([][]string, error) {
	layout, err := h.eventRuns(ctx, eventID)
	if err != nil {
		return nil, err
	}
	var runs [][]string
	for _, r := range layout.grades[grade] {
		runs = append(runs, r.labels)
	}
	return runs, nil
}

// BestIndexKeys returns the keys of best available's index of the event's
// grade for quantity: its zset and its zset of parked runs.
func BestIndexKeys(h *Holds, eventID int64, grade string, quantity int) (string, string) {
	return h.bestIndexKey(eventID, grade, quantity), h.bestParkedKey(eventID, grade, quantity)
}

// EndHold ends the account's hold on the seat as its expiry on Redis's
// clock would, or a Redis that lost it: its lock, its order's record on it
// (seat:order:{e}:<label>) and its index entries go. Tests whose fan lets go
// of a seat of an order awaiting payment, which Release refuses, end the
// hold so instead: the PostgreSQL clock they advance is not Redis's.
func EndHold(ctx context.Context, h *Holds, eventID, accountID int64, label string) error {
	_, err := h.Redis.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, h.lockKey(eventID, label), h.seatOrderKey(eventID, label))
		p.ZRem(ctx, h.holdKey(eventID, accountID), label)
		p.ZRem(ctx, h.Redis.Key("held:{%d}", eventID), label)
		p.HDel(ctx, h.Redis.Key("holder:{%d}", eventID), label)
		return nil
	})
	return err
}
