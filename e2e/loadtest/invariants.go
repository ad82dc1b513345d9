package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Invariant is one rule checked at the end, and what was found.
type Invariant struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// invariantQueries each count the rows that break a rule of DESIGN.md for
// event $1; every count must be 0.
var invariantQueries = []struct{ name, sql string }{
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

// invariants is phase 5: the rules checked from PostgreSQL and Redis, with
// the counts that say how much there was to check.
func (b *Bench) invariants(ctx context.Context) (*Phase, []Invariant) {
	p := b.phase("5. Invariants")
	defer b.endPhase(p)
	id := b.sale.EventID
	var out []Invariant
	for _, q := range invariantQueries {
		var bad int64
		inv := Invariant{Name: q.name}
		if err := b.db.Pool.QueryRow(ctx, q.sql, id).Scan(&bad); err != nil {
			inv.Detail = "query failed: " + err.Error()
		} else {
			inv.OK = bad == 0
			inv.Detail = fmt.Sprintf("%d rows break it", bad)
		}
		out = append(out, inv)
	}
	out = append(out, b.noHoldOnSoldSeat(ctx))

	var sold, orders, confirmed, payments, tickets, buyers int64
	err := b.db.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM sold_seat WHERE event_id = $1),
		(SELECT count(*) FROM orders WHERE event_id = $1),
		(SELECT count(*) FROM orders WHERE event_id = $1 AND status = 'CONFIRMED'),
		(SELECT count(*) FROM payment p JOIN orders o ON o.id = p.order_id WHERE o.event_id = $1),
		(SELECT count(*) FROM ticket WHERE event_id = $1),
		(SELECT count(DISTINCT account_id) FROM sold_seat WHERE event_id = $1)`, id).
		Scan(&sold, &orders, &confirmed, &payments, &tickets, &buyers)
	if err != nil {
		p.note("counts: " + err.Error())
	}
	p.figure("checked", fmt.Sprintf("%d sold seats of %d, %d buyers, %d orders (%d confirmed), %d payments, %d tickets",
		sold, b.sale.Seats, buyers, orders, confirmed, payments, tickets), float64(sold))
	p.figure("confirmed orders", fmt.Sprintf("%d orders CONFIRMED in PostgreSQL", confirmed), float64(confirmed))
	if confirmed == 0 {
		p.note("no confirmed order: the order invariants held for want of orders")
	}
	failed := 0
	for _, inv := range out {
		if !inv.OK {
			failed++
		}
	}
	if failed > 0 {
		p.Status = fmt.Sprintf("%d of %d invariants broken", failed, len(out))
	}
	return p, out
}

// noHoldOnSoldSeat checks that no sold seat still has its hold key
// (store.Holds: seat:lock:{e}:<label>), in pipelined EXISTS.
func (b *Bench) noHoldOnSoldSeat(ctx context.Context) Invariant {
	inv := Invariant{Name: "no hold key left on a sold seat (Redis)"}
	rows, err := b.db.Pool.Query(ctx, `SELECT seat_label FROM sold_seat WHERE event_id = $1`, b.sale.EventID)
	if err != nil {
		inv.Detail = err.Error()
		return inv
	}
	var labels []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			inv.Detail = err.Error()
			return inv
		}
		labels = append(labels, l)
	}
	if err := rows.Err(); err != nil {
		inv.Detail = err.Error()
		return inv
	}
	var held []string
	for start := 0; start < len(labels); start += 1000 {
		part := labels[start:min(start+1000, len(labels))]
		pipe := b.rdb.Pipeline()
		for _, l := range part {
			pipe.Exists(ctx, fmt.Sprintf("%sseat:lock:{%d}:%s", b.srv.RedisPrefix, b.sale.EventID, l))
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			inv.Detail = err.Error()
			return inv
		}
		for i, c := range cmds {
			if c.(*redis.IntCmd).Val() > 0 {
				held = append(held, part[i])
			}
		}
	}
	inv.OK = len(held) == 0
	inv.Detail = fmt.Sprintf("%d of %d sold seats still have a hold key", len(held), len(labels))
	if len(held) > 0 {
		inv.Detail += ": " + strings.Join(held[:min(len(held), 10)], ", ")
	}
	return inv
}
