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

// fixtureEvent is an on-sale event made by newHoldEvent. Its seats are split in two
// grades: R seats in section A and S seats in section B, 50 to a row.
type fixtureEvent struct {
	ID     int64
	R, S   []string // labels by grade, ordered by row and number
	Labels []string // R then S
}

// newHoldEvent inserts with raw SQL a venue, an on-sale event with grades R and S
// and n event seats (the first half R, the rest S), and returns its labels.
func newHoldEvent(tb testing.TB, db *store.DB, n int) fixtureEvent {
	tb.Helper()
	ctx := context.Background()
	var ev fixtureEvent
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var venueID int64
		if err := tx.QueryRow(ctx, `INSERT INTO venue (name) VALUES ('Test Arena') RETURNING id`).Scan(&venueID); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `
			INSERT INTO event (venue_id, title, starts_at, queue_opens_at, sale_ends_at, status)
			VALUES ($1, '{"en": "Test Night"}', now() + interval '30 days', now() - interval '1 hour', now() + interval '1 day', 'on_sale')
			RETURNING id`, venueID).Scan(&ev.ID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO grade (event_id, code, name, price) VALUES ($1, 'R', '{"en": "Royal"}', 150000), ($1, 'S', '{"en": "Special"}', 100000)`, ev.ID); err != nil {
			return err
		}
		for _, g := range []struct {
			section, grade string
			count          int
		}{{"A", "R", (n + 1) / 2}, {"B", "S", n / 2}} {
			_, err := tx.Exec(ctx, `
				INSERT INTO event_seat (event_id, label, section, row_label, number, grade, x, y)
				SELECT $1, $2 || '-' || (i / 50 + 1) || '-' || (i % 50 + 1), $2, (i / 50 + 1)::text, (i % 50 + 1)::text, $3,
				       (i % 50) * 12, (i / 50) * 14
				FROM generate_series(0, $4::int - 1) AS i`, ev.ID, g.section, g.grade, g.count)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("create test event: %v", err)
	}
	for _, g := range []struct {
		grade string
		into  *[]string
	}{{"R", &ev.R}, {"S", &ev.S}} {
		rows, err := db.Pool.Query(ctx, `SELECT label FROM event_seat WHERE event_id = $1 AND grade = $2
			ORDER BY row_label::int, number::int`, ev.ID, g.grade)
		if err != nil {
			tb.Fatalf("list test seats: %v", err)
		}
		if *g.into, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			tb.Fatalf("list test seats: %v", err)
		}
	}
	ev.Labels = append(append([]string{}, ev.R...), ev.S...)
	return ev
}

// newHoldAccount inserts a fan account with raw SQL and returns its id, from
// 1,000,001 up, so that tests may use small numbers for accounts that only
// hold seats (Redis knows no accounts).
func newHoldAccount(tb testing.TB, db *store.DB) int64 {
	tb.Helper()
	var id int64
	err := db.Pool.QueryRow(context.Background(), `
		INSERT INTO account (id, email, name, password_hash) OVERRIDING SYSTEM VALUE
		SELECT greatest(max(id), 1000000) + 1, $1, 'Fan', 'x' FROM account RETURNING id`,
		"fan-"+holdHex(6)+"@example.com").Scan(&id)
	if err != nil {
		tb.Fatalf("create test account: %v", err)
	}
	return id
}

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
