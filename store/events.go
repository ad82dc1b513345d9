package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

var _ boxoffice.EventService = (*Events)(nil)

// Events stores events, their grades and their seats in PostgreSQL. It is
// safe for concurrent use.
type Events struct {
	DB *DB

	// seatCounts keeps OpenQueues' count of each open event's seats: event
	// id → seatCount.
	seatCounts sync.Map
}

// CreateEvent normalizes and validates in, then in one transaction inserts a
// draft event, its grades, and a copy of its venue's seats (INSERT ...
// SELECT), so that later venue edits never change the event, and its audit
// entry (AuditEventCreate, the admin from ctx). Errors: EINVALID
// with Fields: those of EventInput.Validate, "venue_id" for an unknown venue,
// and "grades" naming every grade code the venue's seats have that in lacks
// (the event_seat → grade foreign key backs this).
func (s *Events) CreateEvent(ctx context.Context, in boxoffice.EventInput) (*boxoffice.Event, error) {
	in.Normalize()
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var ev *boxoffice.Event
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM venue WHERE id = $1)`, in.VenueID).Scan(&exists); err != nil {
			return fmt.Errorf("find venue: %w", err)
		}
		if !exists {
			return boxoffice.Invalid(map[string]boxoffice.Msg{"venue_id": boxoffice.M("val_venue_unknown")})
		}
		if err := checkGradesCover(ctx, tx, venueGradesQuery, in.VenueID, in.Grades); err != nil {
			return err
		}
		var id int64
		err := tx.QueryRow(ctx, `
			INSERT INTO event (venue_id, title, description, time_zone, starts_at, queue_opens_at, sale_ends_at,
			                   currency, max_per_account, hold_ttl_seconds, token_ttl_seconds, admission_rate, max_shoppers,
			                   prequeue_opens_at, pow_difficulty)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULLIF($13, 0), $14, $15)
			RETURNING id`, eventArgs(in)...).Scan(&id)
		if pgErrCode(err) == "23503" { // the venue was deleted a moment ago
			return boxoffice.Invalid(map[string]boxoffice.Msg{"venue_id": boxoffice.M("val_venue_unknown")})
		} else if err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		if err := upsertGrades(ctx, tx, id, in.Grades); err != nil {
			return err
		}
		if err := copyVenueSeats(ctx, tx, id, in.VenueID); err != nil {
			return err
		}
		if ev, err = findEvent(ctx, tx, id, nil); err != nil {
			return err
		}
		return writeAudit(ctx, tx, auditEntry{
			AdminID: adminOf(ctx), Action: AuditEventCreate, EventID: id, VenueID: in.VenueID, After: eventFacts(ev),
		}, s.DB.Now())
	})
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// eventFacts are the settings of an event that its audit entries show.
func eventFacts(ev *boxoffice.Event) map[string]any {
	grades := make(map[string]any, len(ev.Grades))
	for _, g := range ev.Grades {
		grades[g.Code] = map[string]any{"name": g.Name, "price": g.Price, "color": g.Color}
	}
	return map[string]any{
		"title": ev.Title, "description": ev.Description, "venue_id": ev.VenueID, "time_zone": ev.TimeZone,
		"starts_at": ev.StartsAt, "queue_opens_at": ev.QueueOpensAt, "sale_ends_at": ev.SaleEndsAt,
		"prequeue_opens_at": nullTime(ev.PrequeueOpensAt), "currency": ev.Currency, "max_per_account": ev.MaxPerAccount,
		"hold_ttl_seconds": int(ev.HoldTTL / time.Second), "token_ttl_seconds": int(ev.TokenTTL / time.Second),
		"admission_rate": ev.AdmissionRate, "max_shoppers": ev.MaxShoppers, "pow_difficulty": ev.PowDifficulty,
		"status": ev.Status, "grades": grades,
	}
}

// changedFacts returns the facts whose values differ between before and
// after (compared as JSON), each side with only those.
func changedFacts(before, after map[string]any) (map[string]any, map[string]any, error) {
	b, a := map[string]any{}, map[string]any{}
	for k, av := range after {
		aj, err := json.Marshal(av)
		if err != nil {
			return nil, nil, err
		}
		bj, err := json.Marshal(before[k])
		if err != nil {
			return nil, nil, err
		}
		if string(aj) != string(bj) {
			b[k], a[k] = before[k], av
		}
	}
	return b, a, nil
}

func eventArgs(in boxoffice.EventInput) []any {
	return []any{in.VenueID, in.Title, in.Description, in.TimeZone, in.StartsAt, in.QueueOpensAt, in.SaleEndsAt,
		in.Currency, in.MaxPerAccount, int(in.HoldTTL / time.Second), int(in.TokenTTL / time.Second),
		in.AdmissionRate, in.MaxShoppers, nullTime(in.PrequeueOpensAt), in.PowDifficulty}
}

// nullTime is t for a nullable column: NULL when zero.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// venueGradesQuery finds the grades of a venue's seats that none of the
// given codes covers (see checkGradesCover).
const venueGradesQuery = `SELECT DISTINCT grade FROM venue_seat WHERE venue_id = $1 AND NOT grade = ANY($2) ORDER BY grade`

// checkGradesCover runs query (parameters: an id and the input's grade codes;
// rows: the seat grades that no input grade covers) and returns EINVALID with
// Fields["grades"] naming them all, or nil when none is missing.
func checkGradesCover(ctx context.Context, tx pgx.Tx, query string, id int64, grades []boxoffice.Grade) error {
	codes := gradeCodes(grades)
	rows, err := tx.Query(ctx, query, id, codes)
	if err != nil {
		return fmt.Errorf("find seat grades: %w", err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("find seat grades: %w", err)
	}
	if len(missing) > 0 {
		return boxoffice.Invalid(map[string]boxoffice.Msg{"grades": boxoffice.M("val_grades_missing", "Grades", strings.Join(missing, ", "))})
	}
	return nil
}

func gradeCodes(grades []boxoffice.Grade) []string {
	codes := make([]string, len(grades))
	for i, g := range grades {
		codes[i] = g.Code
	}
	return codes
}

// upsertGrades inserts the grades, or updates name, price and colour of
// those the event has already.
func upsertGrades(ctx context.Context, tx pgx.Tx, eventID int64, grades []boxoffice.Grade) error {
	names, prices, colors := make([]string, len(grades)), make([]int64, len(grades)), make([]string, len(grades))
	for i, g := range grades {
		name, err := json.Marshal(g.Name)
		if err != nil {
			return fmt.Errorf("save grades: %w", err)
		}
		names[i], prices[i], colors[i] = string(name), g.Price, g.Color
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO grade (event_id, code, name, price, color)
		SELECT $1, * FROM unnest($2::text[], $3::jsonb[], $4::bigint[], $5::text[])
		ON CONFLICT (event_id, code) DO UPDATE SET name = excluded.name, price = excluded.price, color = excluded.color`,
		eventID, gradeCodes(grades), names, prices, colors)
	if err != nil {
		return fmt.Errorf("save grades: %w", err)
	}
	return nil
}

func copyVenueSeats(ctx context.Context, tx pgx.Tx, eventID, venueID int64) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO event_seat (event_id, label, section, row_label, number, grade, x, y)
		SELECT $1, label, section, row_label, number, grade, x, y FROM venue_seat WHERE venue_id = $2`, eventID, venueID)
	if err != nil {
		return fmt.Errorf("copy venue seats: %w", err)
	}
	return nil
}

// UpdateEvent normalizes and validates in and, in one transaction, replaces
// the event's settings and grades (grades missing from in are deleted; a new
// venue replaces the event's seats with a copy of its own). The status does
// not change: see PublishEvent and CloseEvent. The settings that changed go
// to the audit log (AuditEventUpdate, before and after) in the same
// transaction; a save that changes nothing writes no entry. Once the pre-queue has
// opened its time is fixed (EINVALID "prequeue_opens_at"): fans hold draw
// tickets under it.
//
// An event's seats are fixed once its queue opens or it has an order (or a
// blocked seat): the UPDATE itself refuses a new venue then (its WHERE), so
// that the per-process copies of the seats (Holds, the seat map), kept only
// once the seats are fixed (SeatsFixedQuery), never go stale; an order that
// takes a seat while the venue changes makes the deletion of the old seats
// fail (the foreign keys), which refuses the change as well. For the same
// reason the queue's opening cannot move from the past to the future. Once
// tickets are sold the prices of sold grades are fixed too: a grade with
// sold seats cannot change its price. Names and colours may change, and so
// may the prices of grades without sold seats. The event_seat rows of every
// grade whose price changes are locked (FOR UPDATE, which a sale's foreign
// key check waits for) before looking for sold seats, so a sale confirmed at
// the same moment is either seen here or happens at the new price.
//
// Errors: ENOTFOUND; EINVALID as CreateEvent ("grades" against the event's
// own seats, or the new venue's); ECONFLICT naming the venue or the grades
// (Details["grades"], []string) that cannot change.
func (s *Events) UpdateEvent(ctx context.Context, id int64, in boxoffice.EventInput) (*boxoffice.Event, error) {
	in.Normalize()
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var ev *boxoffice.Event
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var venueID int64
		var prequeue *time.Time
		err := tx.QueryRow(ctx, `SELECT venue_id, prequeue_opens_at FROM event WHERE id = $1 FOR NO KEY UPDATE`, id).Scan(&venueID, &prequeue)
		if err != nil {
			return fmt.Errorf("find event %d: %w", id, notFound(err, "err_no_event"))
		}
		old, err := findEvent(ctx, tx, id, nil)
		if err != nil {
			return err
		}
		if prequeue != nil && !prequeue.After(s.DB.Now()) && !prequeue.Equal(in.PrequeueOpensAt) {
			return boxoffice.Invalid(map[string]boxoffice.Msg{"prequeue_opens_at": boxoffice.M("val_prequeue_opened")})
		}
		newVenue := in.VenueID != venueID
		if newVenue { // no orders, hence no sold seats
			if err := checkVenueChange(ctx, tx, in.VenueID); err != nil {
				return err
			}
			if err := checkGradesCover(ctx, tx, venueGradesQuery, in.VenueID, in.Grades); err != nil {
				return err
			}
		} else {
			if err := checkGradesCover(ctx, tx, `SELECT DISTINCT grade FROM event_seat WHERE event_id = $1 AND NOT grade = ANY($2) ORDER BY grade`, id, in.Grades); err != nil {
				return err
			}
			if err := checkSoldPrices(ctx, tx, id, in.Grades); err != nil {
				return err
			}
		}
		args := append(append([]any{id}, eventArgs(in)...), s.DB.Now())
		tag, err := tx.Exec(ctx, `
			UPDATE event SET venue_id = $2, title = $3, description = $4, time_zone = $5, starts_at = $6,
			       queue_opens_at = $7, sale_ends_at = $8, currency = $9, max_per_account = $10,
			       hold_ttl_seconds = $11, token_ttl_seconds = $12, admission_rate = $13,
			       max_shoppers = NULLIF($14, 0), prequeue_opens_at = $15, pow_difficulty = $16, updated_at = now()
			WHERE id = $1
			  AND (queue_opens_at > $17 OR $7 <= $17)
			  AND (venue_id = $2 OR (queue_opens_at > $17
			       AND NOT EXISTS (SELECT 1 FROM orders WHERE event_id = $1)
			       AND NOT EXISTS (SELECT 1 FROM blocked_seat WHERE event_id = $1)))`, args...)
		if err != nil {
			return fmt.Errorf("update event: %w", err)
		}
		if tag.RowsAffected() == 0 && newVenue {
			return venueConflict()
		} else if tag.RowsAffected() == 0 {
			return boxoffice.Invalid(map[string]boxoffice.Msg{"queue_opens_at": boxoffice.M("val_queue_opened_later")})
		}
		if err := upsertGrades(ctx, tx, id, in.Grades); err != nil {
			return err
		}
		if newVenue {
			_, err := tx.Exec(ctx, `DELETE FROM event_seat WHERE event_id = $1`, id)
			if pgErrCode(err) == "23503" { // an order took a seat a moment ago
				return venueConflict()
			} else if err != nil {
				return fmt.Errorf("delete event seats: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM grade WHERE event_id = $1 AND NOT code = ANY($2)`, id, gradeCodes(in.Grades)); err != nil {
			return fmt.Errorf("delete grades: %w", err)
		}
		if newVenue {
			if err := copyVenueSeats(ctx, tx, id, in.VenueID); err != nil {
				return err
			}
		}
		if ev, err = findEvent(ctx, tx, id, nil); err != nil {
			return err
		}
		before, after, err := changedFacts(eventFacts(old), eventFacts(ev))
		if err != nil || len(after) == 0 {
			return err // a form saved without a change changed nothing
		}
		return writeAudit(ctx, tx, auditEntry{
			AdminID: adminOf(ctx), Action: AuditEventUpdate, EventID: id, VenueID: ev.VenueID, Before: before, After: after,
		}, s.DB.Now())
	})
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// SeatsFixedQuery selects whether event $1's seats are fixed at $2: its
// queue opened or it has an order. Neither ever becomes false again
// (UpdateEvent refuses to move an opened queue's opening later, and orders
// stay), and UpdateEvent refuses a venue change once it is true, so a copy
// of the seats read with it true is good for the life of the process.
const SeatsFixedQuery = `SELECT EXISTS (SELECT 1 FROM event WHERE id = $1 AND queue_opens_at <= $2)
	OR EXISTS (SELECT 1 FROM orders WHERE event_id = $1)`

func venueConflict() error {
	return boxoffice.NewError(boxoffice.ECONFLICT, "err_event_venue_fixed")
}

// checkVenueChange checks that the new venue exists (the UPDATE refuses a
// change of fixed seats).
func checkVenueChange(ctx context.Context, tx pgx.Tx, venueID int64) error {
	var exists bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM venue WHERE id = $1)`, venueID).Scan(&exists)
	switch {
	case err != nil:
		return fmt.Errorf("check venue change: %w", err)
	case !exists:
		return boxoffice.Invalid(map[string]boxoffice.Msg{"venue_id": boxoffice.M("val_venue_unknown")})
	}
	return nil
}

// checkSoldPrices refuses a change of price, or the removal, of a grade with
// sold seats. It first locks the event seats of the grades that change, so
// that no sale of them can commit unseen until this transaction ends.
func checkSoldPrices(ctx context.Context, tx pgx.Tx, eventID int64, grades []boxoffice.Grade) error {
	rows, err := tx.Query(ctx, `
		SELECT g.code FROM grade g
		LEFT JOIN unnest($2::text[], $3::bigint[]) AS n(code, price) ON n.code = g.code
		WHERE g.event_id = $1 AND n.price IS DISTINCT FROM g.price`, eventID, gradeCodes(grades), gradePrices(grades))
	if err != nil {
		return fmt.Errorf("find changed grades: %w", err)
	}
	changed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("find changed grades: %w", err)
	}
	if len(changed) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `
		SELECT count(*) FROM (SELECT 1 FROM event_seat WHERE event_id = $1 AND grade = ANY($2) FOR UPDATE) locked`,
		eventID, changed); err != nil {
		return fmt.Errorf("lock seats of changed grades: %w", err)
	}
	rows, err = tx.Query(ctx, `
		SELECT DISTINCT s.grade FROM sold_seat ss
		JOIN event_seat s ON s.event_id = ss.event_id AND s.label = ss.seat_label
		WHERE ss.event_id = $1 AND s.grade = ANY($2) ORDER BY s.grade`, eventID, changed)
	if err != nil {
		return fmt.Errorf("find sold grades: %w", err)
	}
	sold, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("find sold grades: %w", err)
	}
	if len(sold) > 0 {
		e := boxoffice.NewError(boxoffice.ECONFLICT, "err_event_price_fixed", "Grades", strings.Join(sold, ", "))
		e.Details = map[string]any{"grades": sold}
		return e
	}
	return nil
}

func gradePrices(grades []boxoffice.Grade) []int64 {
	prices := make([]int64, len(grades))
	for i, g := range grades {
		prices[i] = g.Price
	}
	return prices
}

// PublishEvent puts a draft event whose sale has not ended on sale, with one
// conditional UPDATE, so of many concurrent calls exactly one succeeds.
// Errors: ENOTFOUND; ECONFLICT if the event is on sale or closed already, or
// if its sale ended (sale_ends_at at or before s.DB.Now()).
func (s *Events) PublishEvent(ctx context.Context, id int64) (*boxoffice.Event, error) {
	now := s.DB.Now()
	return s.setStatus(ctx, id, AuditEventPublish, boxoffice.EventOnSale, &now, boxoffice.EventDraft)
}

// CloseEvent closes a draft or on-sale event (conditional UPDATE, as
// PublishEvent). Errors: ENOTFOUND; ECONFLICT if it is closed already.
func (s *Events) CloseEvent(ctx context.Context, id int64) (*boxoffice.Event, error) {
	return s.setStatus(ctx, id, AuditEventClose, boxoffice.EventClosed, nil, boxoffice.EventDraft, boxoffice.EventOnSale)
}

// setStatus moves the event from one of the statuses from to to, and, when
// saleOpenAt is set, only if its sale ends after that time; the move and its
// audit entry (action, the admin from ctx, before and after status) commit
// together, and a refused move writes none.
func (s *Events) setStatus(ctx context.Context, id int64, action, to string, saleOpenAt *time.Time, from ...string) (*boxoffice.Event, error) {
	var ev *boxoffice.Event
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var before string
		err := tx.QueryRow(ctx, `
			UPDATE event e SET status = $2, updated_at = now()
			FROM (SELECT id, status FROM event WHERE id = $1 FOR NO KEY UPDATE) old
			WHERE e.id = old.id AND old.status = ANY($3) AND ($4::timestamptz IS NULL OR e.sale_ends_at > $4)
			RETURNING old.status`, id, to, from, saleOpenAt).Scan(&before)
		changed := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("set event %d status: %w", id, err)
		}
		ev, err = findEvent(ctx, tx, id, nil)
		if err != nil {
			return err
		}
		if changed {
			return writeAudit(ctx, tx, auditEntry{
				AdminID: adminOf(ctx), Action: action, EventID: id, VenueID: ev.VenueID,
				Before: map[string]any{"status": before}, After: map[string]any{"status": to},
			}, s.DB.Now())
		}
		if slices.Contains(from, ev.Status) {
			return boxoffice.NewError(boxoffice.ECONFLICT, "err_event_sale_ended")
		}
		return statusConflict(ev.Status)
	})
	if err != nil {
		return nil, err
	}
	return ev, nil
}

func statusConflict(status string) error {
	switch status {
	case boxoffice.EventOnSale:
		return boxoffice.NewError(boxoffice.ECONFLICT, "err_event_on_sale")
	case boxoffice.EventClosed:
		return boxoffice.NewError(boxoffice.ECONFLICT, "err_event_closed")
	}
	return boxoffice.NewError(boxoffice.ECONFLICT, "err_event_draft")
}

// SetAdmission pauses (paused true) or resumes admission and/or sets its
// rate in fans per second; a nil argument keeps the setting. The admitter
// reads both from the event. The change and its audit entry (AuditAdmission,
// before and after paused and rate) commit together. Errors: ENOTFOUND; EINVALID with
// Fields["rate"] (outside 1 to boxoffice.MaxAdmissionRate) or, when both are
// nil, Fields["paused"].
func (s *Events) SetAdmission(ctx context.Context, id int64, paused *bool, rate *int) (*boxoffice.Event, error) {
	f := map[string]boxoffice.Msg{}
	if paused == nil && rate == nil {
		f["paused"] = boxoffice.M("val_admission_choose")
	}
	if rate != nil && (*rate < 1 || *rate > boxoffice.MaxAdmissionRate) {
		f["rate"] = boxoffice.M("val_admission_rate", "Max", boxoffice.MaxAdmissionRate)
	}
	if err := boxoffice.Invalid(f); err != nil {
		return nil, err
	}
	var ev *boxoffice.Event
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var wasPaused, isPaused bool
		var wasRate, isRate int
		err := tx.QueryRow(ctx, `
			UPDATE event e SET admission_paused = coalesce($2, old.admission_paused),
			       admission_rate = coalesce($3, old.admission_rate), updated_at = now()
			FROM (SELECT id, admission_paused, admission_rate FROM event WHERE id = $1 FOR NO KEY UPDATE) old
			WHERE e.id = old.id
			RETURNING old.admission_paused, old.admission_rate, e.admission_paused, e.admission_rate`, id, paused, rate).
			Scan(&wasPaused, &wasRate, &isPaused, &isRate)
		if err != nil {
			return fmt.Errorf("set admission of event %d: %w", id, notFound(err, "err_no_event"))
		}
		if ev, err = findEvent(ctx, tx, id, nil); err != nil {
			return err
		}
		return writeAudit(ctx, tx, auditEntry{
			AdminID: adminOf(ctx), Action: AuditAdmission, EventID: id, VenueID: ev.VenueID,
			Before: map[string]any{"paused": wasPaused, "rate": wasRate}, After: map[string]any{"paused": isPaused, "rate": isRate},
		}, s.DB.Now())
	})
	if err != nil {
		return nil, err
	}
	return ev, nil
}

const eventQuery = `
SELECT e.id, e.venue_id, v.name, e.title, e.description, e.time_zone, e.starts_at, e.queue_opens_at,
       e.sale_ends_at, e.currency, e.max_per_account, e.hold_ttl_seconds, e.token_ttl_seconds,
       e.admission_rate, coalesce(e.max_shoppers, 0), e.admission_paused, e.status, e.created_at, e.updated_at,
       e.prequeue_opens_at, e.pow_difficulty
FROM event e JOIN venue v ON v.id = e.venue_id`

func scanEvent(row pgx.Row) (*boxoffice.Event, error) {
	var e boxoffice.Event
	var holdTTL, tokenTTL int
	var prequeue *time.Time
	err := row.Scan(&e.ID, &e.VenueID, &e.VenueName, &e.Title, &e.Description, &e.TimeZone, &e.StartsAt,
		&e.QueueOpensAt, &e.SaleEndsAt, &e.Currency, &e.MaxPerAccount, &holdTTL, &tokenTTL,
		&e.AdmissionRate, &e.MaxShoppers, &e.Paused, &e.Status, &e.CreatedAt, &e.UpdatedAt, &prequeue, &e.PowDifficulty)
	if err != nil {
		return nil, err
	}
	if prequeue != nil {
		e.PrequeueOpensAt = prequeue.UTC()
	}
	e.HoldTTL = time.Duration(holdTTL) * time.Second
	e.TokenTTL = time.Duration(tokenTTL) * time.Second
	for _, t := range []*time.Time{&e.StartsAt, &e.QueueOpensAt, &e.SaleEndsAt, &e.CreatedAt, &e.UpdatedAt} {
		*t = t.UTC()
	}
	return &e, nil
}

// gradeCountsSQL counts event $1's seats by grade, given the labels held in
// Redis ($2, text[]; labels that are not the event's seats are ignored):
// per grade its code, name, price and colour, its seats, those left (neither
// sold, blocked nor held) and those held (neither sold nor blocked, but in a
// PENDING_PAYMENT order or in $2), dearest first. A grade without seats
// counts 0 of each.
//
// Cost: the taken seats (sold, blocked, unpaid order items, $2) are merged into
// one set by label first (one hash or sort on the label; a seat sold or blocked
// is gone even if also held), and the event's seats are then read once and
// hash-joined to it, so the work is O(seats + taken) with no lookup per seat,
// whatever the statistics say: a plan with per-seat index lookups into sold_seat
// and blocked_seat (which the planner chose for the former statement while the
// tables had no statistics, as right after an event is created) read 22 times
// the buffers on the arena. See docs/performance.md, "The event's seat counts".
const gradeCountsSQL = `
	WITH taken AS (
		SELECT label, bool_or(gone) AS gone FROM (
			SELECT seat_label AS label, true AS gone FROM sold_seat WHERE event_id = $1
			UNION ALL SELECT seat_label, true FROM blocked_seat WHERE event_id = $1
			UNION ALL SELECT i.seat_label, false FROM orders o JOIN order_item i ON i.order_id = o.id
			          WHERE o.event_id = $1 AND o.status = 'PENDING_PAYMENT'
			UNION ALL SELECT unnest($2::text[]), false) t
		GROUP BY label),
	counts AS (
		SELECT s.grade, count(*) AS total, count(t.label) FILTER (WHERE t.gone) AS gone,
		       count(t.label) FILTER (WHERE NOT t.gone) AS held
		FROM event_seat s LEFT JOIN taken t ON t.label = s.label
		WHERE s.event_id = $1
		GROUP BY s.grade)
	SELECT g.code, g.name, g.price, g.color, coalesce(c.total, 0),
	       coalesce(c.total - c.gone - c.held, 0), coalesce(c.held, 0)
	FROM grade g LEFT JOIN counts c ON c.grade = g.code
	WHERE g.event_id = $1
	ORDER BY g.price DESC, g.code`

// findEvent reads an event with its grades and their seat counts
// (gradeCountsSQL); held are the labels of seats held in Redis (live holds),
// counted as held like the seats of unpaid orders (nil for none).
func findEvent(ctx context.Context, q querier, id int64, held []string) (*boxoffice.Event, error) {
	if held == nil {
		held = []string{}
	}
	ev, err := scanEvent(q.QueryRow(ctx, eventQuery+` WHERE e.id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("find event %d: %w", id, notFound(err, "err_no_event"))
	}
	rows, err := q.Query(ctx, gradeCountsSQL, id, held)
	if err != nil {
		return nil, fmt.Errorf("find event %d grades: %w", id, err)
	}
	ev.Grades, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.Grade, error) {
		var g boxoffice.Grade
		err := row.Scan(&g.Code, &g.Name, &g.Price, &g.Color, &g.SeatsTotal, &g.SeatsLeft, &g.SeatsHeld)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("find event %d grades: %w", id, err)
	}
	return ev, nil
}

// FindEventByID returns the event with its venue's name and its grades,
// dearest first, each with SeatsTotal (its event seats), SeatsLeft (those
// neither sold, blocked nor in an unpaid order) and SeatsHeld (those in an
// unpaid order), counted by PostgreSQL in one statement; holds in Redis are
// not counted (Holds.EventWithHolds counts them). Times are UTC. Errors:
// ENOTFOUND.
func (s *Events) FindEventByID(ctx context.Context, id int64) (*boxoffice.Event, error) {
	return findEvent(ctx, s.DB.Pool, id, nil)
}

// FindEvents lists events by queue opening (then id) with their venue's
// name, narrowed by f (Upcoming compares the sale end with DB.Now). Grades
// are not loaded (nil): FindEventByID has them with their counts. It reads
// the replica when there is one (DB.Read): the list may be a moment late.
func (s *Events) FindEvents(ctx context.Context, f boxoffice.EventFilter) ([]*boxoffice.Event, error) {
	statuses := f.Statuses
	if statuses == nil {
		statuses = []string{}
	}
	rows, err := s.DB.reader().Query(ctx, eventQuery+`
		WHERE (cardinality($1::text[]) = 0 OR e.status = ANY($1)) AND (NOT $2 OR e.sale_ends_at > $3)
		ORDER BY e.queue_opens_at, e.id`, statuses, f.Upcoming, s.DB.Now())
	if err != nil {
		return nil, fmt.Errorf("find events: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*boxoffice.Event, error) { return scanEvent(row) })
	if err != nil {
		return nil, fmt.Errorf("find events: %w", err)
	}
	return events, nil
}

// EventSeats returns the event's seats (EventID and Price, in minor units,
// set; HasXY false as it is not stored) ordered by section, then row and
// number as numbers. Errors: ENOTFOUND.
func (s *Events) EventSeats(ctx context.Context, eventID int64) ([]boxoffice.Seat, error) {
	seats, err := querySeats(ctx, s.DB.Pool, `
		SELECT s.label, s.section, s.row_label, s.number, s.grade, s.x, s.y, g.price
		FROM event_seat s JOIN grade g ON g.event_id = s.event_id AND g.code = s.grade
		WHERE s.event_id = $1 ORDER BY s.section, s.row_label::int, s.number::int`, eventID)
	if err != nil {
		return nil, fmt.Errorf("event %d seats: %w", eventID, err)
	}
	if len(seats) == 0 { // every stored event has seats, so it does not exist
		if _, err := s.FindEventByID(ctx, eventID); err != nil {
			return nil, err
		}
	}
	for i := range seats {
		seats[i].EventID = eventID
	}
	return seats, nil
}
