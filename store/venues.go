package store

import (
	"context"
	"fmt"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

var _ boxoffice.VenueService = (*Venues)(nil)

// Venues stores venues and their seat maps in PostgreSQL. It is safe for
// concurrent use.
type Venues struct {
	DB *DB
}

// querier is what a pool and a transaction have in common, so that helpers
// run inside or outside a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// CreateVenue validates the name (trimmed) and seats (boxoffice.ValidateVenue)
// and stores them in one transaction, the seats through COPY, with its
// audit entry (AuditVenueCreate, the admin from ctx). Labels are
// recomputed from section, row and number. Errors: EINVALID with
// Fields["name"] and/or Details["problems"].
func (s *Venues) CreateVenue(ctx context.Context, name string, seats []boxoffice.Seat) (*boxoffice.Venue, error) {
	return s.ImportVenue(ctx, name, seats, nil)
}

// ImportVenue is CreateVenue with the sections' best-first orders, stored
// in the same transaction (the default orders are not stored). Errors as
// CreateVenue, and EINVALID as boxoffice.ValidateSectionOrders against the
// seats' sections.
func (s *Venues) ImportVenue(ctx context.Context, name string, seats []boxoffice.Seat, orders []boxoffice.SectionOrder) (*boxoffice.Venue, error) {
	name = boxoffice.NormalizeVenueName(name)
	if err := boxoffice.ValidateVenue(name, seats); err != nil {
		return nil, err
	}
	sections := map[string]bool{}
	for _, st := range seats {
		sections[st.Section] = true
	}
	if err := boxoffice.ValidateSectionOrders(orders, sections); err != nil {
		return nil, err
	}
	v := &boxoffice.Venue{Name: name, Seats: len(seats)}
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO venue (name) VALUES ($1) RETURNING id, created_at`, name).Scan(&v.ID, &v.CreatedAt)
		if err != nil {
			return fmt.Errorf("insert venue: %w", err)
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"venue_seat"},
			[]string{"venue_id", "label", "section", "row_label", "number", "grade", "x", "y"},
			pgx.CopyFromSlice(len(seats), func(i int) ([]any, error) {
				st := seats[i]
				return []any{v.ID, boxoffice.SeatLabel(st.Section, st.Row, st.Number), st.Section, st.Row, st.Number, st.Grade, st.X, st.Y}, nil
			}))
		if err != nil {
			return fmt.Errorf("copy venue seats: %w", err)
		}
		if err := writeSectionOrders(ctx, tx, v.ID, orders); err != nil {
			return err
		}
		return writeAudit(ctx, tx, auditEntry{
			AdminID: adminOf(ctx), Action: AuditVenueCreate, VenueID: v.ID,
			After: map[string]any{"name": name, "seats": len(seats)},
		}, s.DB.Now())
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

const venueQuery = `
SELECT v.id, v.name, v.created_at,
       (SELECT count(*) FROM venue_seat s WHERE s.venue_id = v.id),
       (SELECT count(*) FROM event e WHERE e.venue_id = v.id)
FROM venue v`

func scanVenue(row pgx.Row) (*boxoffice.Venue, error) {
	var v boxoffice.Venue
	if err := row.Scan(&v.ID, &v.Name, &v.CreatedAt, &v.Seats, &v.Events); err != nil {
		return nil, err
	}
	return &v, nil
}

// FindVenues lists every venue by name (then id), with its seat and event
// counts, from the replica when there is one (DB.Read).
func (s *Venues) FindVenues(ctx context.Context) ([]*boxoffice.Venue, error) {
	rows, err := s.DB.reader().Query(ctx, venueQuery+` ORDER BY v.name, v.id`)
	if err != nil {
		return nil, fmt.Errorf("find venues: %w", err)
	}
	venues, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*boxoffice.Venue, error) { return scanVenue(row) })
	if err != nil {
		return nil, fmt.Errorf("find venues: %w", err)
	}
	return venues, nil
}

// FindVenueByID returns a venue with its seat and event counts. Errors:
// ENOTFOUND.
func (s *Venues) FindVenueByID(ctx context.Context, id int64) (*boxoffice.Venue, error) {
	v, err := scanVenue(s.DB.Pool.QueryRow(ctx, venueQuery+` WHERE v.id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("find venue %d: %w", id, notFound(err, "err_no_venue"))
	}
	return v, nil
}

// VenueSeats returns a venue's seats (Label, Section, Row, Number, Grade, X,
// Y; HasXY is not stored and false) ordered by section, then row and number
// as numbers. Errors: ENOTFOUND.
func (s *Venues) VenueSeats(ctx context.Context, venueID int64) ([]boxoffice.Seat, error) {
	seats, err := querySeats(ctx, s.DB.Pool, `
		SELECT label, section, row_label, number, grade, x, y, 0::bigint FROM venue_seat
		WHERE venue_id = $1 ORDER BY section, row_label::int, number::int`, venueID)
	if err != nil {
		return nil, fmt.Errorf("venue %d seats: %w", venueID, err)
	}
	if len(seats) == 0 { // a stored venue has seats, so it does not exist
		if _, err := s.FindVenueByID(ctx, venueID); err != nil {
			return nil, err
		}
	}
	return seats, nil
}

// querySeats runs a query whose rows are label, section, row, number, grade,
// x, y, price.
func querySeats(ctx context.Context, q querier, sql string, args ...any) ([]boxoffice.Seat, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.Seat, error) {
		var st boxoffice.Seat
		err := row.Scan(&st.Label, &st.Section, &st.Row, &st.Number, &st.Grade, &st.X, &st.Y, &st.Price)
		return st, err
	})
}

// RenameVenue sets a venue's name (trimmed). Events show the new name; their
// seats do not change. The rename and its audit entry (AuditVenueRename,
// the admin from ctx, before and after name) commit together. Errors:
// ENOTFOUND; EINVALID with Fields["name"].
func (s *Venues) RenameVenue(ctx context.Context, id int64, name string) (*boxoffice.Venue, error) {
	name = boxoffice.NormalizeVenueName(name)
	if err := boxoffice.ValidateVenueName(name); err != nil {
		return nil, err
	}
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var before string
		err := tx.QueryRow(ctx, `
			UPDATE venue v SET name = $2 FROM (SELECT id, name FROM venue WHERE id = $1 FOR UPDATE) old
			WHERE v.id = old.id RETURNING old.name`, id, name).Scan(&before)
		if err != nil {
			return fmt.Errorf("rename venue %d: %w", id, notFound(err, "err_no_venue"))
		}
		return writeAudit(ctx, tx, auditEntry{
			AdminID: adminOf(ctx), Action: AuditVenueRename, VenueID: id,
			Before: map[string]any{"name": before}, After: map[string]any{"name": name},
		}, s.DB.Now())
	})
	if err != nil {
		return nil, err
	}
	return s.FindVenueByID(ctx, id)
}

// DeleteVenue deletes a venue with its seat map, and writes its audit entry
// (AuditVenueDelete, before name and seats) in the same transaction. The
// foreign key from event (ON DELETE RESTRICT) decides, so an event created
// at the same moment either sees no venue or keeps it. Errors: ENOTFOUND;
// ECONFLICT while an event uses the venue.
func (s *Venues) DeleteVenue(ctx context.Context, id int64) error {
	return s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var seats int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM venue_seat WHERE venue_id = $1`, id).Scan(&seats); err != nil {
			return fmt.Errorf("delete venue %d: %w", id, err)
		}
		var name string
		err := tx.QueryRow(ctx, `DELETE FROM venue WHERE id = $1 RETURNING name`, id).Scan(&name)
		switch {
		case pgErrCode(err) == "23503": // foreign_key_violation
			return boxoffice.NewError(boxoffice.ECONFLICT, "err_venue_in_use")
		case err != nil:
			return fmt.Errorf("delete venue %d: %w", id, notFound(err, "err_no_venue"))
		}
		return writeAudit(ctx, tx, auditEntry{
			AdminID: adminOf(ctx), Action: AuditVenueDelete, VenueID: id,
			Before: map[string]any{"name": name, "seats": seats},
		}, s.DB.Now())
	})
}
