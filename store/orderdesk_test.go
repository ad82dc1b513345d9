package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
)

// deskOrders is the number of orders sellEach makes: the order desk's
// searches must stay on their indexes at that size.
const deskOrders = 15000

// sellEach sells each seat of the event to an account of its own
// ("buyer<n>@example.com"), one CONFIRMED order per seat with id
// "<prefix>-<n>" (n from 1, zero-padded to 6), created a second apart from
// base, with raw SQL, then ANALYZEs, as a database that lived would be.
func sellEach(tb testing.TB, db *store.DB, eventID int64, prefix string, base time.Time) {
	tb.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			CREATE TEMP TABLE sale ON COMMIT DROP AS
			SELECT row_number() OVER (ORDER BY section, row_label::int, number::int) AS n, label, grade
			FROM event_seat WHERE event_id = $1`, eventID)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO account (email, name, password_hash)
			SELECT $1 || '-buyer' || n || '@example.com', 'Buyer', 'x' FROM sale`, prefix)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO orders (id, event_id, account_id, status, amount, currency, order_name, expires_at, created_at, confirmed_at)
			SELECT $2 || '-' || lpad(s.n::text, 6, '0'), $1, a.id, 'CONFIRMED', g.price, 'KRW', 'test', $3::timestamptz,
			       $3::timestamptz + s.n * interval '1 second', $3::timestamptz + s.n * interval '1 second' + interval '1 minute'
			FROM sale s
			JOIN account a ON a.email = $2 || '-buyer' || s.n || '@example.com'
			JOIN grade g ON g.event_id = $1 AND g.code = s.grade`, eventID, prefix, base)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO order_item (order_id, event_id, seat_label, grade, price)
			SELECT $2 || '-' || lpad(s.n::text, 6, '0'), $1, s.label, s.grade, g.price
			FROM sale s JOIN grade g ON g.event_id = $1 AND g.code = s.grade`, eventID, prefix)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO sold_seat (event_id, seat_label, order_id, account_id)
			SELECT $1, i.seat_label, o.id, o.account_id FROM orders o JOIN order_item i ON i.order_id = o.id
			WHERE o.event_id = $1`, eventID)
		return err
	})
	if err != nil {
		tb.Fatalf("sell each seat: %v", err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE`); err != nil {
		tb.Fatal(err)
	}
}

func deskOrderID(prefix string, n int) string { return fmt.Sprintf("%s-%06d", prefix, n) }

func listedIDs(p *boxoffice.OrderPage) []string {
	ids := make([]string, len(p.Orders))
	for i, l := range p.Orders {
		ids[i] = l.Order.ID
	}
	return ids
}

func TestOrders_SearchOrders(t *testing.T) {
	t.Parallel()
	db := storetest.MustOpenDB(t)
	ctx := context.Background()
	big := newHoldEvent(t, db, deskOrders)
	small := newHoldEvent(t, db, 4)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sellEach(t, db, big.ID, "big", base)
	sellEach(t, db, small.ID, "small", base.Add(-time.Hour))
	orders := &store.Orders{DB: db}
	search := func(t *testing.T, s boxoffice.OrderSearch) *boxoffice.OrderPage {
		t.Helper()
		p, err := orders.SearchOrders(ctx, s)
		if err != nil {
			t.Fatalf("search %+v: %v", s, err)
		}
		return p
	}

	t.Run("NewestFirstByKeyset", func(t *testing.T) {
		first := search(t, boxoffice.OrderSearch{EventID: big.ID})
		if len(first.Orders) != boxoffice.OrderPageSize || first.Orders[0].Order.ID != deskOrderID("big", deskOrders) || first.Next == nil {
			t.Fatalf("first page: %d orders from %v, next %v; want %d from %s and a next page",
				len(first.Orders), listedIDs(first)[:1], first.Next, boxoffice.OrderPageSize, deskOrderID("big", deskOrders))
		}
		l := first.Orders[0]
		if l.Buyer != fmt.Sprintf("big-buyer%d@example.com", deskOrders) || len(l.Order.Items) != 1 {
			t.Errorf("listing: buyer %q, %d items; want its buyer and 1 item", l.Buyer, len(l.Order.Items))
		}
		cursor, err := boxoffice.ParseOrderCursor(first.Next.String())
		if err != nil || cursor != *first.Next {
			t.Fatalf("cursor %v read back as %v, %v", first.Next, cursor, err)
		}
		second := search(t, boxoffice.OrderSearch{EventID: big.ID, After: &cursor})
		if got, want := second.Orders[0].Order.ID, deskOrderID("big", deskOrders-boxoffice.OrderPageSize); got != want {
			t.Errorf("second page starts at %s, want %s", got, want)
		}
		last := search(t, boxoffice.OrderSearch{EventID: small.ID, Limit: 4})
		if last.Next != nil || len(last.Orders) != 4 {
			t.Errorf("a page of all 4 orders: %d orders, next %v; want 4 and none", len(last.Orders), last.Next)
		}
	})

	t.Run("Query", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			s    boxoffice.OrderSearch
			want []string
		}{
			{"OrderID", boxoffice.OrderSearch{Query: deskOrderID("big", 777)}, []string{deskOrderID("big", 777)}},
			{"EmailPrefixAnyCase", boxoffice.OrderSearch{Query: "Big-Buyer1234@"}, []string{deskOrderID("big", 1234)}},
			{"EmailPrefixMany", boxoffice.OrderSearch{Query: "small-buyer"}, []string{deskOrderID("small", 4), deskOrderID("small", 3), deskOrderID("small", 2), deskOrderID("small", 1)}},
			{"SeatInEveryEvent", boxoffice.OrderSearch{Query: "A-1-2"}, []string{deskOrderID("big", 2), deskOrderID("small", 2)}},
			{"SeatInOneEvent", boxoffice.OrderSearch{Query: "A-1-2", EventID: small.ID}, []string{deskOrderID("small", 2)}},
			{"Status", boxoffice.OrderSearch{Query: "A-1-2", Status: boxoffice.OrderRefunded}, []string{}},
			{"Nothing", boxoffice.OrderSearch{Query: "%"}, []string{}},
			{"UnderscoreIsLiteral", boxoffice.OrderSearch{Query: "big_buyer1234@"}, []string{}},
			{"PercentIsLiteral", boxoffice.OrderSearch{Query: "big%1234@"}, []string{}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got := listedIDs(search(t, tc.s)); !slices.Equal(got, tc.want) {
					t.Errorf("found %v, want %v", got, tc.want)
				}
			})
		}
	})

	// Each shape of the search reads its index: no sequential scan of
	// orders, their items or accounts, whatever the narrowing.
	t.Run("Indexes", func(t *testing.T) {
		after := boxoffice.OrderCursor{CreatedAt: base.Add(5000 * time.Second), ID: deskOrderID("big", 5000)}
		for _, s := range []boxoffice.OrderSearch{
			{}, {EventID: big.ID}, {Status: boxoffice.OrderConfirmed}, {After: &after}, {EventID: big.ID, After: &after},
			{Query: deskOrderID("big", 1)}, {Query: "big-buyer12345@"}, {Query: "B-3-4"}, {Query: "B-3-4", EventID: big.ID, Status: boxoffice.OrderConfirmed},
		} {
			sql, args := store.SearchQuery(boxoffice.OrderSearch{EventID: s.EventID, Status: s.Status, Query: s.Query, After: s.After, Limit: boxoffice.OrderPageSize})
			rows, err := db.Pool.Query(ctx, "EXPLAIN "+sql, args...)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			plan := strings.Join(lines, "\n")
			for _, table := range []string{"orders", "order_item", "account"} {
				if strings.Contains(plan, "Seq Scan on "+table+" ") {
					t.Errorf("search %+v scans %s sequentially:\n%s", s, table, plan)
				}
			}
		}
	})
}

func TestOrders_EachOrderLine(t *testing.T) {
	t.Parallel()
	db := storetest.MustOpenDB(t)
	ctx := context.Background()
	ev := newHoldEvent(t, db, 6)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sellEach(t, db, ev.ID, "line", base)
	for _, sql := range []string{
		`INSERT INTO payment (payment_key, order_id, amount, status, outcome) VALUES ('pk-1', $1, 150000, 'DONE', 'confirmed')`,
		`INSERT INTO refund (id, order_id, payment_key, amount, reason, source, status, done_at)
		 VALUES ('rf-1', $1, 'pk-1', 150000, 'moved', 'admin', 'done', '2026-03-02T00:00:00Z')`,
		`INSERT INTO refund_item (refund_id, order_id, seat_label, price) VALUES ('rf-1', $1, 'A-1-1', 150000)`,
	} {
		if _, err := db.Pool.Exec(ctx, sql, deskOrderID("line", 1)); err != nil {
			t.Fatal(err)
		}
	}
	orders := &store.Orders{DB: db}
	var lines []boxoffice.OrderLine
	err := orders.EachOrderLine(ctx, ev.ID, func(l boxoffice.OrderLine) error {
		lines = append(lines, l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6", len(lines))
	}
	first, second := lines[0], lines[1]
	if first.OrderID != deskOrderID("line", 1) || first.Seat != "A-1-1" || first.Grade != "R" || first.Price != 150000 || first.Currency != "KRW" ||
		first.Buyer != "line-buyer1@example.com" || first.PaidAt == nil || !first.PaidAt.Equal(base.Add(61*time.Second)) ||
		first.RefundedAt == nil || !first.RefundedAt.Equal(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("first line %+v, want line-000001's A-1-1 paid at %v and refunded on 2 March", first, base.Add(61*time.Second))
	}
	if second.OrderID != deskOrderID("line", 2) || second.RefundedAt != nil {
		t.Errorf("second line %+v, want line-000002, not refunded", second)
	}
	stop := fmt.Errorf("enough")
	n := 0
	err = orders.EachOrderLine(ctx, ev.ID, func(boxoffice.OrderLine) error { n++; return stop })
	if n != 1 || !errors.Is(err, stop) {
		t.Errorf("fn's error: %d calls, %v; want 1 call and its error", n, err)
	}
}
