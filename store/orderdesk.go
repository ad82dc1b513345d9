package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

var _ boxoffice.OrderDesk = (*Orders)(nil)

// SearchOrders returns one page of the orders s finds, newest first (by
// created_at, then id), each with its items and its buyer's e-mail, from the
// replica when there is one (DB.Read). Every narrowing has its index
// (migrations/00015_order_desk.sql): the page is read by keyset from
// orders_created, orders_event_created or orders_status_created, and a
// query is looked up as an order id (the primary key), a buyer's e-mail
// prefix (account_email_prefix) and a seat label (order_item_seat), so that
// a page costs the same with 15,000 orders as with 15.
func (s *Orders) SearchOrders(ctx context.Context, search boxoffice.OrderSearch) (*boxoffice.OrderPage, error) {
	if search.Limit <= 0 {
		search.Limit = boxoffice.OrderPageSize
	}
	sql, args := searchQuery(search)
	rows, err := s.DB.reader().Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("search orders: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.OrderListing, error) {
		var l boxoffice.OrderListing
		o, err := scanOrder(row, &l.Buyer)
		l.Order = o
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("search orders: %w", err)
	}
	page := &boxoffice.OrderPage{Orders: list}
	if len(list) > search.Limit {
		page.Orders = list[:search.Limit]
		last := page.Orders[search.Limit-1].Order
		page.Next = &boxoffice.OrderCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	orders := make([]*boxoffice.Order, len(page.Orders))
	for i, l := range page.Orders {
		orders[i] = l.Order
	}
	if err := s.loadDetails(ctx, s.DB.reader(), orders); err != nil {
		return nil, err
	}
	return page, nil
}

// searchQuery is the statement of SearchOrders and its arguments: one more
// row than a page, to know whether another follows. Only the narrowings
// asked for are in it, so that PostgreSQL plans each shape for its index.
func searchQuery(search boxoffice.OrderSearch) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if search.EventID != 0 {
		where = append(where, "o.event_id = "+arg(search.EventID))
	}
	if search.Status != "" {
		where = append(where, "o.status = "+arg(string(search.Status)))
	}
	if search.After != nil {
		where = append(where, fmt.Sprintf("(o.created_at, o.id) < (%s, %s)", arg(search.After.CreatedAt), arg(search.After.ID)))
	}
	if search.Query != "" {
		q := arg(search.Query)
		// A prefix as a range of text_pattern_ops (byte order), which a
		// generic plan can use as well as a custom one: every e-mail that
		// starts with p sorts at or after p and before p followed by the
		// largest code point.
		p := strings.ToLower(search.Query)
		from, to := arg(p), arg(p+"\U0010FFFF")
		where = append(where, `o.id IN (
			SELECT `+q+`::text
			UNION ALL SELECT o2.id FROM account a2 JOIN orders o2 ON o2.account_id = a2.id
			          WHERE a2.email ~>=~ `+from+` AND a2.email ~<~ `+to+`
			UNION ALL SELECT i.order_id FROM order_item i WHERE i.seat_label = `+q+`)`)
	}
	sql := `SELECT ` + orderColumns + `, a.email FROM orders o JOIN event e ON e.id = o.event_id JOIN account a ON a.id = o.account_id`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY o.created_at DESC, o.id DESC LIMIT " + arg(search.Limit+1)
	return sql, args
}

// EachOrderLine calls fn with every order line of the event (every seat of
// every order, whatever its status), by order (oldest first) and seat, as
// pgx reads them off the connection: memory holds one line at a time, so
// an export of 15,000 sold seats costs what one of 15 does. It reads the
// replica when there is one. An unknown event has no lines. It stops at
// fn's first error and returns it.
func (s *Orders) EachOrderLine(ctx context.Context, eventID int64, fn func(boxoffice.OrderLine) error) error {
	rows, err := s.DB.reader().Query(ctx, `
		SELECT o.id, o.status, a.email, i.seat_label, i.grade, i.price, o.currency, o.confirmed_at,
		       coalesce(r.done_at, CASE WHEN o.status = 'REFUNDED' THEN (
		           SELECT max(p.updated_at) FROM payment p WHERE p.order_id = o.id AND p.outcome = 'refunded') END)
		FROM orders o
		JOIN account a ON a.id = o.account_id
		JOIN order_item i ON i.order_id = o.id
		LEFT JOIN refund_item ri ON ri.order_id = i.order_id AND ri.seat_label = i.seat_label
		LEFT JOIN refund r ON r.id = ri.refund_id AND r.status = 'done'
		WHERE o.event_id = $1
		ORDER BY o.created_at, o.id, i.seat_label`, eventID)
	if err != nil {
		return fmt.Errorf("order lines of event %d: %w", eventID, err)
	}
	var l boxoffice.OrderLine
	var paid, refunded *time.Time
	_, err = pgx.ForEachRow(rows, []any{&l.OrderID, &l.Status, &l.Buyer, &l.Seat, &l.Grade, &l.Price, &l.Currency, &paid, &refunded}, func() error {
		l.PaidAt, l.RefundedAt = paid, refunded
		return fn(l)
	})
	if err != nil {
		return fmt.Errorf("order lines of event %d: %w", eventID, err)
	}
	return nil
}
