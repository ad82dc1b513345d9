package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
)

// fixtureEvent, newHoldEvent and newHoldAccount are storetest's event and
// account fixtures, shared with the checkout service's tests.
type fixtureEvent = storetest.Event

var (
	newHoldEvent   = storetest.NewEvent
	newHoldAccount = storetest.NewAccount
)

// sellSeats records in PostgreSQL, as a confirmation would, that the account bought
// labels of the event: a CONFIRMED order, its sold_seat rows and the account's
// purchase_count. It returns the account's tickets for the event in all.
// Redis is not told.
func sellSeats(tb testing.TB, db *store.DB, eventID, accountID int64, labels ...string) int {
	tb.Helper()
	ctx := context.Background()
	var total int
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		orderID := holdHex(12)
		_, err := tx.Exec(ctx, `
			INSERT INTO orders (id, event_id, account_id, status, amount, currency, order_name, expires_at, confirmed_at)
			VALUES ($1, $2, $3, 'CONFIRMED', $4, 'KRW', 'Test Night', now() + interval '10 minutes', now())`,
			orderID, eventID, accountID, 100000*len(labels))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO sold_seat (event_id, seat_label, order_id, account_id)
			SELECT $1, l, $3, $4 FROM unnest($2::text[]) AS l`, eventID, labels, orderID, accountID)
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			INSERT INTO purchase_count (event_id, account_id, tickets) VALUES ($1, $2, $3)
			ON CONFLICT (event_id, account_id) DO UPDATE SET tickets = purchase_count.tickets + EXCLUDED.tickets
			RETURNING tickets`, eventID, accountID, len(labels)).Scan(&total)
	})
	if err != nil {
		tb.Fatalf("sellSeats %v to account %d: %v", labels, accountID, err)
	}
	return total
}

// forgetRedis deletes every key under r's prefix, as FLUSHALL would.
func forgetRedis(tb testing.TB, r *store.Redis) {
	tb.Helper()
	ctx := context.Background()
	keys, err := storetest.Keys(ctx, r, r.Prefix+"*")
	if err != nil {
		tb.Fatalf("list test keys: %v", err)
	}
	if err := storetest.DeleteKeys(ctx, r, keys); err != nil {
		tb.Fatalf("delete test keys: %v", err)
	}
}

func holdHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
