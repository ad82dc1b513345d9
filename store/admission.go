package store

import (
	"context"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

var _ boxoffice.AdmissionSource = (*Events)(nil)

// OpenQueues lists, by id, the events whose queue is open at now (on sale,
// queue opened at or before now, sale ending after it: Event.QueueOpen)
// with their admission settings as the admitter needs them: rate (fans per
// second), cap on live tokens (0 = none), paused, token TTL, SoldOut (below),
// and DrawAt (the queue's opening) for an event with a pre-queue. The admitter calls it once per tick on the
// instance that holds the tick's lock.
//
// SoldOut is true when every event seat is sold or blocked, as the event's
// page says sold_out (Event.SeatStatus), and false again once a seat is
// unblocked or refunded. It compares the distinct labels of the event's
// sold_seat and blocked_seat rows, read on their keys (at most the event's
// seats), with the number of its seats, which cannot change once its queue
// is open (only a new venue changes them, and only before the queue opens):
// that number is counted once per event and venue and kept (seatCounts). It
// is one query, and a second the first time an event is listed.
func (s *Events) OpenQueues(ctx context.Context, now time.Time) ([]boxoffice.AdmissionSettings, error) {
	rows, err := s.DB.Pool.Query(ctx, `
		SELECT e.id, e.admission_rate, coalesce(e.max_shoppers, 0), e.admission_paused, e.token_ttl_seconds,
		       CASE WHEN e.prequeue_opens_at IS NOT NULL THEN e.queue_opens_at END,
		       e.venue_id, (SELECT count(*) FROM (SELECT ss.seat_label FROM sold_seat ss WHERE ss.event_id = e.id
		                                          UNION SELECT bs.seat_label FROM blocked_seat bs WHERE bs.event_id = e.id) gone)
		FROM event e
		WHERE e.status = $1 AND e.queue_opens_at <= $2 AND e.sale_ends_at > $2
		ORDER BY e.id`, boxoffice.EventOnSale, now)
	if err != nil {
		return nil, fmt.Errorf("open queues: %w", err)
	}
	var open []boxoffice.AdmissionSettings
	var gone []seatCount // per event of open: its venue and its seats sold or blocked
	var a boxoffice.AdmissionSettings
	var ttl int
	var drawAt *time.Time
	var c seatCount
	_, err = pgx.ForEachRow(rows, []any{&a.EventID, &a.Rate, &a.MaxShoppers, &a.Paused, &ttl, &drawAt, &c.venueID, &c.seats}, func() error {
		a.TokenTTL, a.DrawAt = time.Duration(ttl)*time.Second, time.Time{}
		if drawAt != nil {
			a.DrawAt = *drawAt
		}
		open, gone = append(open, a), append(gone, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open queues: %w", err)
	}
	seats, err := s.seatsOf(ctx, open, gone)
	if err != nil {
		return nil, err
	}
	for i := range open {
		open[i].SoldOut = gone[i].seats >= seats[i]
	}
	return open, nil
}

// seatCount is a number of seats of an event on a venue.
type seatCount struct {
	venueID int64
	seats   int64
}

// seatsOf returns the number of seats of each event of open, which is on
// the venue of its venues entry: from seatCounts, counting in one query
// those not kept yet (or kept for another venue).
func (s *Events) seatsOf(ctx context.Context, open []boxoffice.AdmissionSettings, venues []seatCount) ([]int64, error) {
	seats := make([]int64, len(open))
	var missing []int64
	for i, a := range open {
		if c, ok := s.seatCounts.Load(a.EventID); ok && c.(seatCount).venueID == venues[i].venueID {
			seats[i] = c.(seatCount).seats
		} else {
			missing = append(missing, a.EventID)
		}
	}
	if len(missing) == 0 {
		return seats, nil
	}
	rows, err := s.DB.Pool.Query(ctx, `
		SELECT e.id, e.venue_id, (SELECT count(*) FROM event_seat es WHERE es.event_id = e.id)
		FROM event e WHERE e.id = ANY($1)`, missing)
	if err != nil {
		return nil, fmt.Errorf("open queues: count seats: %w", err)
	}
	var id int64
	var c seatCount
	if _, err := pgx.ForEachRow(rows, []any{&id, &c.venueID, &c.seats}, func() error {
		s.seatCounts.Store(id, c)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("open queues: count seats: %w", err)
	}
	for i, a := range open {
		if c, ok := s.seatCounts.Load(a.EventID); ok {
			seats[i] = c.(seatCount).seats
		}
	}
	return seats, nil
}
