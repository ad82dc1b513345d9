package handlers_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
)

// sellEvery sells each seat of the event to an account of its own, one
// CONFIRMED order per seat ("desk-<n>", n from 1 zero-padded to 6, created
// a second apart), with raw SQL; buyers are "buyer<n>@example.com" but for
// those named in emails (n from 1), which a CSV export must not let a
// spreadsheet run.
func sellEvery(t *testing.T, app *testApp, eventID int64, emails ...string) {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE TABLE desk_sale AS SELECT row_number() OVER (ORDER BY section, row_label::int, number::int) AS n, label, grade
		 FROM event_seat WHERE event_id = $1`,
		`INSERT INTO account (email, name, password_hash)
		 SELECT coalesce(($2::text[])[n], 'buyer' || n || '@example.com'), 'Buyer', 'x' FROM desk_sale WHERE $1::bigint > 0`,
		`INSERT INTO orders (id, event_id, account_id, status, amount, currency, order_name, expires_at, created_at, confirmed_at)
		 SELECT 'desk-' || lpad(s.n::text, 6, '0'), $1, a.id, 'CONFIRMED', g.price, 'KRW', 'test', now(),
		        timestamptz '2030-11-01T00:00:00Z' + s.n * interval '1 second', timestamptz '2030-11-01T00:01:00Z' + s.n * interval '1 second'
		 FROM desk_sale s JOIN account a ON a.email = coalesce(($2::text[])[s.n], 'buyer' || s.n || '@example.com')
		 JOIN grade g ON g.event_id = $1 AND g.code = s.grade`,
		`INSERT INTO order_item (order_id, event_id, seat_label, grade, price)
		 SELECT 'desk-' || lpad(s.n::text, 6, '0'), $1, s.label, s.grade, g.price FROM desk_sale s JOIN grade g ON g.event_id = $1 AND g.code = s.grade`,
		`INSERT INTO sold_seat (event_id, seat_label, order_id, account_id)
		 SELECT $1, i.seat_label, o.id, o.account_id FROM orders o JOIN order_item i ON i.order_id = o.id WHERE o.event_id = $1`,
		`DROP TABLE desk_sale`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, eventID)
		}
		if strings.Contains(sql, "$2") {
			args = append(args, emails)
		}
		if _, err := app.DB.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("sell every seat: %v", err)
		}
	}
}

func TestAdminOrders_Search(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	v := adminVenue(t, app, "Hall")
	e := adminEvent(t, app, v.ID, "Search night")
	sellEvery(t, app, e.ID, "first@example.com")

	page := doc(t, admin.do("GET", fmt.Sprintf("/admin/orders?event=%d", e.ID), nil))
	if got := page.Find(`[data-testid="order-row"]`).Length(); got != 10 {
		t.Fatalf("%d orders listed, want the event's 10", got)
	}
	if href := page.Find(`[data-testid="order-link"]`).First().AttrOr("href", ""); href != "/admin/orders/desk-000010" {
		t.Errorf("first order links to %q, want the newest, /admin/orders/desk-000010", href)
	}
	if page.Find(`form[data-testid="order-filters"][method="get"][action="/admin/orders"]`).Length() != 1 {
		t.Error("no filters form that works without JavaScript")
	}

	resp := admin.do("GET", "/admin/orders?q=FIRST@", nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	var got struct {
		Orders []struct {
			OrderID string   `json:"order_id"`
			Buyer   string   `json:"buyer"`
			Seats   []string `json:"seats"`
			Status  string   `json:"status"`
		} `json:"orders"`
		Next *string `json:"next"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Orders) != 1 || got.Orders[0].OrderID != "desk-000001" || got.Orders[0].Buyer != "first@example.com" ||
		got.Orders[0].Status != "CONFIRMED" || len(got.Orders[0].Seats) != 1 || got.Next != nil {
		t.Errorf("search by e-mail: %+v, want desk-000001 of first@example.com and no next page", got)
	}

	t.Run("Paged", func(t *testing.T) {
		big, err := app.Srv.Venues.CreateVenue(context.Background(), "Arena", generate(t, boxoffice.SectionSpec{Name: "A", Rows: 1, SeatsPerRow: 60, Grade: "R"}))
		if err != nil {
			t.Fatal(err)
		}
		many := adminEvent(t, app, big.ID, "Many orders")
		if _, err := app.DB.Pool.Exec(context.Background(), `DELETE FROM sold_seat; DELETE FROM order_item; DELETE FROM orders; DELETE FROM account WHERE name = 'Buyer'`); err != nil {
			t.Fatal(err)
		}
		sellEvery(t, app, many.ID)
		first := doc(t, admin.do("GET", fmt.Sprintf("/admin/orders?event=%d&status=CONFIRMED", many.ID), nil))
		next := first.Find(`[data-testid="next-page"]`).AttrOr("href", "")
		if n := first.Find(`[data-testid="order-row"]`).Length(); n != boxoffice.OrderPageSize || !strings.Contains(next, "after=") ||
			!strings.Contains(next, fmt.Sprintf("event=%d", many.ID)) || !strings.Contains(next, "status=CONFIRMED") {
			t.Fatalf("first page: %d orders, next %q; want %d and a link keeping the filters", n, next, boxoffice.OrderPageSize)
		}
		second := doc(t, admin.do("GET", next, nil))
		if n := second.Find(`[data-testid="order-row"]`).Length(); n != 60-boxoffice.OrderPageSize || second.Find(`[data-testid="next-page"]`).Length() != 0 {
			t.Errorf("second page: %d orders, want the %d left and no next link", n, 60-boxoffice.OrderPageSize)
		}
		if first := second.Find(`[data-testid="order-row"]`).First().AttrOr("data-order", ""); first != "desk-000010" {
			t.Errorf("second page starts at %s, want desk-000010", first)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		bad := "/admin/orders?event=abc&status=SHIPPED&after=yesterday&q=x"
		resp := admin.do("GET", bad, nil)
		wantStatus(t, resp, http.StatusBadRequest)
		d := doc(t, resp)
		if n := d.Find(`[data-testid="field-error"]`).Length(); n != 3 || !strings.Contains(d.Text(), `"abc" is not an event number.`) {
			t.Errorf("%d reasons (%q), want the event's, the status's and the cursor's at once", n, testid(d, "field-error"))
		}
		if v := d.Find(`[data-testid="filter-q"]`).AttrOr("value", ""); v != "x" {
			t.Errorf("the form kept q %q, want x", v)
		}
		resp = admin.do("GET", bad, nil, "Accept: application/json")
		wantErrorCode(t, resp, boxoffice.EBADREQUEST)
		resp = admin.do("GET", "/admin/orders?status=SHIPPED", nil, "Accept-Language: ko")
		wantStatus(t, resp, http.StatusBadRequest)
		if d := doc(t, resp); !strings.Contains(d.Text(), `"SHIPPED"은(는) 예매 상태가 아닙니다.`) {
			t.Errorf("Korean page says %q", testid(d, "field-error"))
		}
	})
}

// countingDesk counts the order lines the export has read from the store.
type countingDesk struct {
	boxoffice.OrderDesk
	lines atomic.Int64
}

func (d *countingDesk) EachOrderLine(ctx context.Context, eventID int64, fn func(boxoffice.OrderLine) error) error {
	return d.OrderDesk.EachOrderLine(ctx, eventID, func(l boxoffice.OrderLine) error {
		d.lines.Add(1)
		return fn(l)
	})
}

// flushWatcher is a response writer that notes, at its first flush, how
// many lines the store had given and how many bytes the client had.
type flushWatcher struct {
	*httptest.ResponseRecorder
	desk                 *countingDesk
	flushes              int
	linesAtFirst, sentAt int64
}

func (w *flushWatcher) Flush() {
	if w.flushes == 0 {
		w.linesAtFirst, w.sentAt = w.desk.lines.Load(), int64(w.Body.Len())
	}
	w.flushes++
}

// The export of 15,000 sold seats streams: the first lines reach the
// client before the store has read the rest, and buyer data that a
// spreadsheet would run as a formula is kept as text.
func TestAdminOrdersCSV(t *testing.T) {
	t.Parallel()
	desk := &countingDesk{}
	app := newTestApp(t, func(s *handlers.Server) { desk.OrderDesk, s.Desk = s.Desk, desk })
	admin := app.newAdmin(t)
	const seats = 15000
	v, err := app.Srv.Venues.CreateVenue(context.Background(), "Stadium", generate(t, boxoffice.SectionSpec{Name: "A", Rows: 150, SeatsPerRow: 100, Grade: "R"}))
	if err != nil {
		t.Fatal(err)
	}
	e := adminEvent(t, app, v.ID, "Stadium night")
	formulas := []string{"=1+2@example.com", "+sum(a1)@example.com", "-2+3@example.com", "@sum(1)@example.com"}
	sellEvery(t, app, e.ID, formulas...)

	path := fmt.Sprintf("/admin/events/%d/orders.csv", e.ID)
	req := httptest.NewRequest("GET", app.URL+path, nil)
	u, _ := url.Parse(app.URL)
	for _, c := range admin.Jar.Cookies(u) {
		req.AddCookie(c)
	}
	w := &flushWatcher{ResponseRecorder: httptest.NewRecorder(), desk: desk}
	app.Config.Handler.ServeHTTP(w, req)
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %s, want 200 text/csv", w.Code, w.Header().Get("Content-Type"))
	}
	if w.flushes < seats/1000 || w.linesAtFirst >= seats || w.sentAt == 0 {
		t.Errorf("%d flushes, the first after %d of %d lines with %d bytes sent; want the first lines sent before the rest were read",
			w.flushes, w.linesAtFirst, seats, w.sentAt)
	}
	records, err := csv.NewReader(w.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != seats+1 || strings.Join(records[0], ",") != strings.Join(boxoffice.OrderLineHeader, ",") {
		t.Fatalf("%d records, header %v; want %d lines under %v", len(records), records[0], seats, boxoffice.OrderLineHeader)
	}
	for i, f := range formulas {
		if got := records[i+1][2]; got != "'"+f {
			t.Errorf("buyer %q exported as %q, want it quoted as text", f, got)
		}
	}
	first := records[1]
	if first[0] != "desk-000001" || first[1] != "CONFIRMED" || first[3] != "A-1-1" || first[4] != "R" || first[5] != "150000" || first[6] != "KRW" ||
		first[7] != "2030-11-01T09:01:01+09:00" || first[8] != "" {
		t.Errorf("first line %v, want desk-000001 CONFIRMED A-1-1 R 150000 KRW paid 2030-11-01T09:01:01+09:00 (Asia/Seoul), not refunded", first)
	}

	edit := doc(t, admin.do("GET", fmt.Sprintf("/admin/events/%d/edit", e.ID), nil))
	if href := edit.Find(`[data-testid="orders-csv-link"]`).AttrOr("href", ""); href != path {
		t.Errorf("the event page links the export as %q, want %q", href, path)
	}
	wantStatus(t, admin.do("GET", "/admin/events/999999/orders.csv", nil), http.StatusNotFound)
	fan, _ := app.newAccount(t, "fan@example.com", boxoffice.RoleFan)
	wantStatus(t, fan.do("GET", path, nil), http.StatusForbidden)
}
