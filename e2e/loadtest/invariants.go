package main

import (
	"context"
	"fmt"

	"github.com/boxoffice/boxoffice/e2e/invariant"
	"github.com/boxoffice/boxoffice/store"
)

// invariants is phase 6: the rules checked from PostgreSQL and Redis for
// both events (the measured steps' and the sell-out's), with the counts
// that say how much there was to check. The sell-out's results and figures
// are named "sell-out: ...".
func (b *Bench) invariants(ctx context.Context) (*Phase, []invariant.Result) {
	p := b.phase("6. Invariants")
	defer b.endPhase(p)
	var out []invariant.Result
	for _, ev := range []struct {
		prefix string
		sale   Sale
	}{{"", b.sale}, {"sell-out: ", b.sellout}} {
		if ev.sale.EventID == 0 {
			continue
		}
		for _, r := range b.checkEvent(ctx, p, ev.prefix, ev.sale) {
			r.Name = ev.prefix + r.Name
			out = append(out, r)
		}
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

// checkEvent checks the invariants of sale's event and adds the counts of
// what there was to check to p, their names after prefix.
func (b *Bench) checkEvent(ctx context.Context, p *Phase, prefix string, sale Sale) []invariant.Result {
	id := sale.EventID
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
		p.note(prefix + "counts: " + err.Error())
	}
	p.figure(prefix+"checked", fmt.Sprintf("event %d: %d sold seats of %d, %d buyers, %d orders (%d confirmed), %d payments, %d tickets",
		id, sold, sale.Seats, buyers, orders, confirmed, payments, tickets), float64(sold))
	p.figure(prefix+"confirmed orders", fmt.Sprintf("%d orders CONFIRMED in PostgreSQL", confirmed), float64(confirmed))
	if confirmed == 0 {
		p.note(prefix + "no confirmed order: the order invariants held for want of orders")
	}
	return out
}
