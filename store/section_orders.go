package store

import (
	"context"
	"fmt"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

// SectionOrders returns the best-first order of every section of a venue's
// seat map (migrations/00016_section_order.sql), by section name; a section
// never set has the default order. Errors: ENOTFOUND.
func (s *Venues) SectionOrders(ctx context.Context, venueID int64) ([]boxoffice.SectionOrder, error) {
	orders, err := sectionOrders(ctx, s.DB.Pool, venueID)
	if err != nil {
		return nil, err
	}
	if len(orders) == 0 { // a stored venue has seats, so it does not exist
		if _, err := s.FindVenueByID(ctx, venueID); err != nil {
			return nil, err
		}
	}
	return orders, nil
}

// sectionOrders reads the orders of a venue's sections, as SectionOrders.
func sectionOrders(ctx context.Context, q querier, venueID int64) ([]boxoffice.SectionOrder, error) {
	rows, err := q.Query(ctx, `
		SELECT s.section, coalesce(o.rank, 0), coalesce(o.row_order, 'front'), coalesce(o.seat_order, 'stage')
		FROM (SELECT DISTINCT section FROM venue_seat WHERE venue_id = $1) s
		LEFT JOIN venue_section_order o ON o.venue_id = $1 AND o.section = s.section
		ORDER BY s.section`, venueID)
	if err != nil {
		return nil, fmt.Errorf("section orders of venue %d: %w", venueID, err)
	}
	orders, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.SectionOrder, error) {
		var o boxoffice.SectionOrder
		err := row.Scan(&o.Section, &o.Rank, &o.Rows, &o.Seats)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("section orders of venue %d: %w", venueID, err)
	}
	return orders, nil
}

// SetSectionOrders sets the orders of the named sections of a venue, in one
// transaction with its audit entry (AuditVenueOrder, the admin from ctx,
// before and after of the sections that changed; nothing is written when
// none did). It raises the venue's best_order_version, which every
// instance's copy of an event's runs checks at most every bestOrderMaxAge
// (Holds.eventRuns), so a change reaches the best available of every event
// of the venue, on sale or not, on every instance within that time. The
// venue's row is locked first, so that concurrent changes apply one after
// the other. Errors: ENOTFOUND; EINVALID as
// boxoffice.ValidateSectionOrders, and nothing changed.
func (s *Venues) SetSectionOrders(ctx context.Context, venueID int64, orders []boxoffice.SectionOrder) error {
	return s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `SELECT id FROM venue WHERE id = $1 FOR UPDATE`, venueID).Scan(&id); err != nil {
			return fmt.Errorf("set section orders of venue %d: %w", venueID, notFound(err, "err_no_venue"))
		}
		current, err := sectionOrders(ctx, tx, venueID)
		if err != nil {
			return err
		}
		before, sections := map[string]boxoffice.SectionOrder{}, map[string]bool{}
		for _, o := range current {
			before[o.Section], sections[o.Section] = o, true
		}
		if err := boxoffice.ValidateSectionOrders(orders, sections); err != nil {
			return err
		}
		var changed []boxoffice.SectionOrder
		var names []string
		was, now := map[string]any{}, map[string]any{}
		for _, o := range orders {
			o = normalOrder(o)
			if o == before[o.Section] {
				continue
			}
			changed, names = append(changed, o), append(names, o.Section)
			was[o.Section], now[o.Section] = orderAudit(before[o.Section]), orderAudit(o)
		}
		if len(changed) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM venue_section_order WHERE venue_id = $1 AND section = ANY($2)`, venueID, names); err != nil {
			return fmt.Errorf("set section orders of venue %d: %w", venueID, err)
		}
		if err := writeSectionOrders(ctx, tx, venueID, changed); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE venue SET best_order_version = best_order_version + 1 WHERE id = $1`, venueID); err != nil {
			return fmt.Errorf("set section orders of venue %d: %w", venueID, err)
		}
		return writeAudit(ctx, tx, auditEntry{
			AdminID: adminOf(ctx), Action: AuditVenueOrder, VenueID: venueID, Before: was, After: now,
		}, s.DB.Now())
	})
}

// normalOrder spells o's defaults out, as sectionOrders reads them.
func normalOrder(o boxoffice.SectionOrder) boxoffice.SectionOrder {
	o.Rows, o.Seats = o.RowOrder(), o.SeatOrder()
	return o
}

// orderAudit is a section's order as the audit log shows it.
func orderAudit(o boxoffice.SectionOrder) map[string]any {
	return map[string]any{"rank": o.Rank, "row_order": o.RowOrder(), "seat_order": o.SeatOrder()}
}

// writeSectionOrders inserts the orders that are not the default (the
// sections must have no row yet).
func writeSectionOrders(ctx context.Context, tx pgx.Tx, venueID int64, orders []boxoffice.SectionOrder) error {
	for _, o := range orders {
		if o.IsDefault() {
			continue
		}
		var rank *int
		if o.Rank > 0 {
			rank = &o.Rank
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO venue_section_order (venue_id, section, rank, row_order, seat_order) VALUES ($1, $2, $3, $4, $5)`,
			venueID, o.Section, rank, o.RowOrder(), o.SeatOrder()); err != nil {
			return fmt.Errorf("section order %q of venue %d: %w", o.Section, venueID, err)
		}
	}
	return nil
}
