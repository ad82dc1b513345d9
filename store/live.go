package store

import (
	"context"
	"fmt"
	"time"

	_ "embed"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/live_held.lua
var liveHeldLua string

var liveHeldScript = redis.NewScript(liveHeldLua)

// saleFiguresSQL reads an event's ($1) sale figures by grade in one
// statement, given the labels of its live holds in Redis ($2) and the start
// of the last minute ($3). Each seat takes the first state that applies:
// sold (sold_seat), blocked, held (a live hold, or an item of a
// PENDING_PAYMENT order), free. Revenue is the prices of the sold seats'
// order items. The event-wide counts (confirmed in the last minute, payments
// refused: FAILED orders and those REFUNDED by their confirmation, which
// never confirmed them; refunds done) repeat on every row.
const saleFiguresSQL = `
	WITH held AS (SELECT DISTINCT unnest($2::text[]) AS label),
	unpaid AS (
		SELECT DISTINCT i.seat_label FROM orders o JOIN order_item i ON i.order_id = o.id
		WHERE o.event_id = $1 AND o.status = 'PENDING_PAYMENT'),
	blocked AS (SELECT seat_label FROM blocked_seat WHERE event_id = $1),
	seat AS (
		SELECT es.grade,
			CASE WHEN ss.seat_label IS NOT NULL THEN 'sold'
			     WHEN b.seat_label IS NOT NULL THEN 'blocked'
			     WHEN h.label IS NOT NULL OR u.seat_label IS NOT NULL THEN 'held'
			     ELSE 'free' END AS state,
			oi.price
		FROM event_seat es
		LEFT JOIN sold_seat ss ON ss.event_id = es.event_id AND ss.seat_label = es.label
		LEFT JOIN order_item oi ON oi.order_id = ss.order_id AND oi.seat_label = ss.seat_label
		LEFT JOIN blocked b ON b.seat_label = es.label
		LEFT JOIN held h ON h.label = es.label
		LEFT JOIN unpaid u ON u.seat_label = es.label
		WHERE es.event_id = $1)
	SELECT g.code,
		count(s.state) FILTER (WHERE s.state = 'sold'),
		count(s.state) FILTER (WHERE s.state = 'held'),
		count(s.state) FILTER (WHERE s.state = 'free'),
		count(s.state) FILTER (WHERE s.state = 'blocked'),
		COALESCE(sum(s.price) FILTER (WHERE s.state = 'sold'), 0)::bigint,
		e.currency,
		(SELECT count(*) FROM orders WHERE event_id = $1 AND status IN ('CONFIRMED', 'REFUNDED') AND confirmed_at > $3),
		(SELECT count(*) FROM orders WHERE event_id = $1 AND (status = 'FAILED' OR (status = 'REFUNDED' AND confirmed_at IS NULL))),
		(SELECT count(*) FROM refund r JOIN orders o ON o.id = r.order_id WHERE o.event_id = $1 AND r.status = 'done')
	FROM event e
	JOIN grade g ON g.event_id = e.id
	LEFT JOIN seat s ON s.grade = g.code
	WHERE e.id = $1
	GROUP BY g.code, g.price, e.currency
	ORDER BY g.price DESC, g.code`

// heldKey is the event's index of held seats: held:{e}, a zset of label ->
// hold expiry (ms), kept by the hold scripts.
func (h *Holds) heldKey(eventID int64) string { return h.Redis.Key("held:{%d}", eventID) }

// SaleFigures returns the event's seats (sold, blocked, held, free, in total
// and by grade), revenue and the counts of the last minute's orders, failed
// payments and refunds (see boxoffice.SaleFigures).
//
// Cost, whatever the number of watchers: one Redis round trip (a read-only
// script returning the labels of the live holds, O(held seats)) and one
// PostgreSQL statement that scans the event's seats once with hash joins on
// its sold seats, unpaid orders' items and the held labels (O(seats): about
// 15,000 rows for an arena) and counts its orders through orders_event_status.
// Callers that serve many watchers share one call per tick (the live page
// does). The two reads are not one snapshot: a seat held in Redis and sold in
// between counts as sold, and each seat is counted once in any case.
// Errors: ENOTFOUND for an unknown event; Redis's and PostgreSQL's.
func (h *Holds) SaleFigures(ctx context.Context, eventID int64) (boxoffice.SaleFigures, error) {
	held, err := liveHeldScript.RunRO(ctx, h.Redis.Client, []string{h.heldKey(eventID)}).StringSlice()
	if err != nil {
		return boxoffice.SaleFigures{}, fmt.Errorf("sale figures of event %d: held seats: %w", eventID, err)
	}
	rows, err := h.DB.Pool.Query(ctx, saleFiguresSQL, eventID, held, h.DB.Now().Add(-time.Minute))
	if err != nil {
		return boxoffice.SaleFigures{}, fmt.Errorf("sale figures of event %d: %w", eventID, err)
	}
	var f boxoffice.SaleFigures
	var g boxoffice.GradeFigures
	var revenue int64
	_, err = pgx.ForEachRow(rows, []any{&g.Code, &g.Sold, &g.Held, &g.Free, &g.Blocked, &revenue, &f.Currency,
		&f.OrdersLastMinute, &f.PaymentFailures, &f.Refunds}, func() error {
		f.Grades = append(f.Grades, g)
		f.Sold, f.Held, f.Free, f.Blocked = f.Sold+g.Sold, f.Held+g.Held, f.Free+g.Free, f.Blocked+g.Blocked
		f.Revenue += revenue
		return nil
	})
	if err != nil {
		return boxoffice.SaleFigures{}, fmt.Errorf("sale figures of event %d: %w", eventID, err)
	}
	if f.Currency == "" {
		return boxoffice.SaleFigures{}, boxoffice.NewError(boxoffice.ENOTFOUND, "err_no_event")
	}
	return f, nil
}
