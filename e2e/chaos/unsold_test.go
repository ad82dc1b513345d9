package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// explainUnsold logs, for a sale that did not sell out, what a person needs
// to tell why: each unsold seat's state in Redis (its hold key and the time
// left on it, its entries in held, holder, claimed and sold) and its orders
// in PostgreSQL, then the fans who gave up and what their last seat map
// showed of those seats.
func (c *crowd) explainUnsold(ctx context.Context, t *testing.T) {
	t.Helper()
	s, id := c.sale, c.sale.Event.ID
	rows, err := s.DB.Pool.Query(ctx, `SELECT label FROM event_seat s WHERE event_id = $1
		AND NOT EXISTS (SELECT 1 FROM sold_seat ss WHERE ss.event_id = s.event_id AND ss.seat_label = s.label)
		ORDER BY label`, id)
	if err != nil {
		t.Errorf("unsold seats: %v", err)
		return
	}
	unsold, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Errorf("unsold seats: %v", err)
		return
	}
	rc, now := s.Redis.Client, time.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "%d unsold seats, at %s:\n", len(unsold), now.Format("15:04:05.000"))
	for _, l := range unsold {
		lock := rc.Get(ctx, s.Redis.Key("seat:lock:{%d}:%s", id, l)).Val()
		pttl := rc.PTTL(ctx, s.Redis.Key("seat:lock:{%d}:%s", id, l)).Val()
		held := rc.ZScore(ctx, s.Redis.Key("held:{%d}", id), l)
		holder := rc.HGet(ctx, s.Redis.Key("holder:{%d}", id), l).Val()
		claimed := rc.ZScore(ctx, s.Redis.Key("claimed:{%d}", id), l)
		sold := rc.SIsMember(ctx, s.Redis.Key("sold:{%d}", id), l).Val()
		fmt.Fprintf(&b, "  %s: Redis: hold key %q (ttl %v), held %s, holder %q, claimed %s, sold %v\n",
			l, lock, pttl, zscore(held.Val(), held.Err()), holder, zscore(claimed.Val(), claimed.Err()), sold)
		orders, err := s.DB.Pool.Query(ctx, `SELECT o.id, a.id, a.email, o.status, o.failure_code, o.created_at, o.expires_at, o.updated_at
			FROM order_item i JOIN orders o ON o.id = i.order_id JOIN account a ON a.id = o.account_id
			WHERE i.event_id = $1 AND i.seat_label = $2 ORDER BY o.created_at`, id, l)
		if err != nil {
			t.Errorf("orders of seat %s: %v", l, err)
			continue
		}
		var order, email, status, failure string
		var acct int64
		var created, expires, updated time.Time
		_, err = pgx.ForEachRow(orders, []any{&order, &acct, &email, &status, &failure, &created, &expires, &updated}, func() error {
			fmt.Fprintf(&b, "    order %s of account %d (%s): %s %s, created %s, expires %s, updated %s\n", order, acct, email, status, failure,
				created.Format("15:04:05.000"), expires.Format("15:04:05.000"), updated.Format("15:04:05.000"))
			return nil
		})
		if err != nil {
			t.Errorf("orders of seat %s: %v", l, err)
		}
	}
	c.mu.Lock()
	gaveUp := slices.Clone(c.gaveUp)
	c.mu.Unlock()
	slices.SortFunc(gaveUp, func(x, y giveUp) int { return x.at.Compare(y.at) })
	fmt.Fprintf(&b, "%d fans found no free seat; what the last ones saw of the unsold seats:\n", len(gaveUp))
	for _, g := range gaveUp[max(0, len(gaveUp)-20):] {
		var saw []string
		for _, l := range unsold {
			st, ok := g.saw[l]
			if !ok {
				st = "sold"
			}
			saw = append(saw, l+" "+st)
		}
		fmt.Fprintf(&b, "  fan %d (fan%d@chaos.boxoffice.test) at %s: %s\n", g.fan, g.fan, g.at.Format("15:04:05.000"), strings.Join(saw, ", "))
	}
	t.Log(b.String())
}

// zscore shows a sorted set's score of a member: a time (Unix ms) as a
// clock time, or "none".
func zscore(v float64, err error) string {
	if err != nil {
		return "none"
	}
	return time.UnixMilli(int64(v)).Format("15:04:05.000")
}
