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
// with their admission settings as the admitter needs them, in one query:
// rate (fans per second), cap on live tokens (0 = none), paused, token TTL,
// SoldOut when every event seat has a sold_seat row, and DrawAt (the
// queue's opening) for an event with a pre-queue. The admitter calls
// it once per tick on the instance that holds the tick's lock.
func (s *Events) OpenQueues(ctx context.Context, now time.Time) ([]boxoffice.AdmissionSettings, error) {
	rows, err := s.DB.Pool.Query(ctx, `
		SELECT e.id, e.admission_rate, coalesce(e.max_shoppers, 0), e.admission_paused, e.token_ttl_seconds,
		       NOT EXISTS (SELECT 1 FROM event_seat es WHERE es.event_id = e.id AND NOT EXISTS (
		           SELECT 1 FROM sold_seat ss WHERE ss.event_id = es.event_id AND ss.seat_label = es.label)),
		       CASE WHEN e.prequeue_opens_at IS NOT NULL THEN e.queue_opens_at END
		FROM event e
		WHERE e.status = $1 AND e.queue_opens_at <= $2 AND e.sale_ends_at > $2
		ORDER BY e.id`, boxoffice.EventOnSale, now)
	if err != nil {
		return nil, fmt.Errorf("open queues: %w", err)
	}
	open, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.AdmissionSettings, error) {
		var a boxoffice.AdmissionSettings
		var ttl int
		var drawAt *time.Time
		err := row.Scan(&a.EventID, &a.Rate, &a.MaxShoppers, &a.Paused, &ttl, &a.SoldOut, &drawAt)
		a.TokenTTL = time.Duration(ttl) * time.Second
		if drawAt != nil {
			a.DrawAt = *drawAt
		}
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("open queues: %w", err)
	}
	return open, nil
}
