// Package invariant checks, after a sale, the rules of DESIGN.md that the
// stores must show whatever happened during it: in PostgreSQL, no seat sold
// twice, no account over its limit, every confirmed order paid once for its
// amount and with its tickets, every sold seat in a confirmed order of its
// buyer; in Redis, no hold left on a sold seat. The load test and the chaos
// tests check a sale's end with it.
package invariant

import (
	"context"
	"fmt"
	"strings"

	"github.com/boxoffice/boxoffice/store"
	"github.com/redis/go-redis/v9"
)

// Result is one rule and what was found.
type Result struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"` // how many rows or keys break it, or why it could not be checked
}

// queries each count the rows that break a rule of DESIGN.md for event $1;
// every count must be 0.
var queries = []struct{ name, sql string }{
	{"no seat sold twice (sold_seat, ticket, and the items of confirmed orders)", `
		SELECT (SELECT count(*) - count(DISTINCT seat_label) FROM sold_seat WHERE event_id = $1)
		     + (SELECT count(*) - count(DISTINCT seat_label) FROM ticket WHERE event_id = $1)
		     + (SELECT count(*) FROM (
		           SELECT i.seat_label FROM order_item i JOIN orders o ON o.id = i.order_id
		           WHERE o.event_id = $1 AND o.status = 'CONFIRMED'
		           GROUP BY i.seat_label HAVING count(*) > 1) twice)`},
	{"no account over its limit (sold seats, and seats of confirmed orders, per account)", `
		SELECT (SELECT count(*) FROM (
		           SELECT account_id FROM sold_seat WHERE event_id = $1 GROUP BY account_id
		           HAVING count(*) > (SELECT max_per_account FROM event WHERE id = $1)) over_sold)
		     + (SELECT count(*) FROM (
		           SELECT o.account_id FROM order_item i JOIN orders o ON o.id = i.order_id
		           WHERE o.event_id = $1 AND o.status = 'CONFIRMED' GROUP BY o.account_id
		           HAVING count(*) > (SELECT max_per_account FROM event WHERE id = $1)) over_ordered)`},
	{"every confirmed order has exactly one confirmed payment of its amount, and a ticket for each of its seats", `
		SELECT count(*) FROM orders o
		WHERE o.event_id = $1 AND o.status = 'CONFIRMED' AND (
		      (SELECT count(*) FROM payment p WHERE p.order_id = o.id AND p.outcome = 'confirmed') <> 1
		   OR NOT EXISTS (SELECT 1 FROM payment p WHERE p.order_id = o.id AND p.outcome = 'confirmed' AND p.amount = o.amount)
		   OR (SELECT count(*) FROM ticket t WHERE t.order_id = o.id) <> (SELECT count(*) FROM order_item i WHERE i.order_id = o.id)
		   OR EXISTS (SELECT 1 FROM order_item i WHERE i.order_id = o.id AND NOT EXISTS (
		          SELECT 1 FROM ticket t WHERE t.order_id = o.id AND t.seat_label = i.seat_label)))`},
	{"every sold seat belongs to a confirmed order of its buyer that lists it", `
		SELECT count(*) FROM sold_seat s LEFT JOIN orders o ON o.id = s.order_id
		WHERE s.event_id = $1 AND (o.id IS NULL OR o.status <> 'CONFIRMED' OR o.account_id <> s.account_id
		   OR NOT EXISTS (SELECT 1 FROM order_item i WHERE i.order_id = s.order_id AND i.seat_label = s.seat_label))`},
}

// noHoldName is the rule that Check checks in Redis.
const noHoldName = "no hold key left on a sold seat (Redis)"

// Names returns the names of the rules Check checks, in its order.
func Names() []string {
	names := make([]string, 0, len(queries)+1)
	for _, q := range queries {
		names = append(names, q.name)
	}
	return append(names, noHoldName)
}

// Check checks every rule (Names) for the event eventID: the queries in
// db, then the hold keys in r (its Client and Prefix, as the binary under
// test writes them). A rule that cannot be checked, a query failing, is
// reported broken with the error in Detail.
func Check(ctx context.Context, db *store.DB, r *store.Redis, eventID int64) []Result {
	out := make([]Result, 0, len(queries)+1)
	for _, q := range queries {
		res := Result{Name: q.name}
		var bad int64
		if err := db.Pool.QueryRow(ctx, q.sql, eventID).Scan(&bad); err != nil {
			res.Detail = "query failed: " + err.Error()
		} else {
			res.OK = bad == 0
			res.Detail = fmt.Sprintf("%d rows break it", bad)
		}
		out = append(out, res)
	}
	return append(out, noHoldOnSoldSeat(ctx, db, r, eventID))
}

// noHoldOnSoldSeat checks that no sold seat still has its hold key
// (store.Holds: seat:lock:{e}:<label>), in pipelined EXISTS.
func noHoldOnSoldSeat(ctx context.Context, db *store.DB, r *store.Redis, eventID int64) Result {
	res := Result{Name: noHoldName}
	rows, err := db.Pool.Query(ctx, `SELECT seat_label FROM sold_seat WHERE event_id = $1`, eventID)
	if err != nil {
		res.Detail = err.Error()
		return res
	}
	defer rows.Close()
	var labels []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			res.Detail = err.Error()
			return res
		}
		labels = append(labels, l)
	}
	if err := rows.Err(); err != nil {
		res.Detail = err.Error()
		return res
	}
	var held []string
	for start := 0; start < len(labels); start += 1000 {
		part := labels[start:min(start+1000, len(labels))]
		pipe := r.Client.Pipeline()
		for _, l := range part {
			pipe.Exists(ctx, r.Key("seat:lock:{%d}:%s", eventID, l))
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			res.Detail = err.Error()
			return res
		}
		for i, c := range cmds {
			if c.(*redis.IntCmd).Val() > 0 {
				held = append(held, part[i])
			}
		}
	}
	res.OK = len(held) == 0
	res.Detail = fmt.Sprintf("%d of %d sold seats still have a hold key", len(held), len(labels))
	if len(held) > 0 {
		res.Detail += ": " + strings.Join(held[:min(len(held), 10)], ", ")
	}
	return res
}
