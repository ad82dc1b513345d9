package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/jackc/pgx/v5"
)

// Event is an on-sale event made by NewEvent. Its seats are split in two
// grades: R seats in section A and S seats in section B, 50 to a row.
type Event struct {
	ID     int64
	R, S   []string // labels by grade, ordered by row and number
	Labels []string // R then S
}

// NewEvent inserts with raw SQL a venue, an on-sale event with grades R and S
// and n event seats (the first half R, the rest S), and returns its labels.
func NewEvent(tb testing.TB, db *store.DB, n int) Event {
	tb.Helper()
	ctx := context.Background()
	var ev Event
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

// NewAccount inserts a fan account with raw SQL and returns its id, from
// 1,000,001 up, so that tests may use small numbers for accounts that only
// hold seats (Redis knows no accounts).
func NewAccount(tb testing.TB, db *store.DB) int64 {
	tb.Helper()
	var id int64
	err := db.Pool.QueryRow(context.Background(), `
		INSERT INTO account (id, email, name, password_hash) OVERRIDING SYSTEM VALUE
		SELECT greatest(max(id), 1000000) + 1, $1, 'Fan', 'x' FROM account RETURNING id`,
		"fan-"+randomHex(6)+"@example.com").Scan(&id)
	if err != nil {
		tb.Fatalf("create test account: %v", err)
	}
	return id
}

// WantError fails unless err is a *boxoffice.Error with the code, and returns it.
func WantError(tb testing.TB, err error, code string) *boxoffice.Error {
	tb.Helper()
	var e *boxoffice.Error
	if !errors.As(err, &e) || e.Code != code {
		tb.Fatalf("got error %v, want code %s", err, code)
	}
	return e
}
