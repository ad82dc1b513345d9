package main

import (
	"context"
	"fmt"

	"github.com/boxoffice/boxoffice/e2e/invariant"
	"github.com/boxoffice/boxoffice/store"
)

// invariants is phase 5: the rules checked from PostgreSQL and Redis, with
// the counts that say how much there was to check.
func (b *Bench) invariants(ctx context.Context) (*Phase, []invariant.Result) {
	p := b.phase("5. Invariants")
	defer b.endPhase(p)
	id := b.sale.EventID
	out := invariant.Check(ctx, b.db, &store.Redis{Client: b.rdb, Prefix: b.srv.RedisPrefix}, id)

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
