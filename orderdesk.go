package boxoffice

import (
	"context"
	"encoding/csv"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OrderPageSize is how many orders one page of the order desk's search
// holds.
const OrderPageSize = 50

// OrderSearch is a search of the order desk (GET /admin/orders): every
// field narrows it, the zero value finds every order.
type OrderSearch struct {
	EventID int64       // 0: every event
	Status  OrderStatus // "": any status
	// Query is an order id (exactly), the start of a buyer's e-mail (any
	// case), or a seat label (exactly); "" matches every order.
	Query string
	// After is the cursor of the last order of the previous page (nil: the
	// first page).
	After *OrderCursor
	Limit int // orders per page; OrderPageSize when 0
}

// OrderCursor is where a page of the order desk's search ends: orders are
// listed newest first by creation time, then by id, so the next page holds
// those strictly before (CreatedAt, ID).
type OrderCursor struct {
	CreatedAt time.Time // PostgreSQL's microseconds
	ID        string
}

// String is the cursor as the next link's "after" parameter:
// "<microseconds since 1970 UTC>.<order id>".
func (c OrderCursor) String() string {
	return strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + "." + c.ID
}

// ParseOrderCursor reads a cursor written by OrderCursor.String. Errors:
// EBADREQUEST for anything else.
func ParseOrderCursor(s string) (OrderCursor, error) {
	micros, id, ok := strings.Cut(s, ".")
	us, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || us < 0 || !ValidOrderID(id) {
		return OrderCursor{}, NewError(EBADREQUEST, "err_bad_cursor")
	}
	return OrderCursor{CreatedAt: time.UnixMicro(us).UTC(), ID: id}, nil
}

// ParseOrderSearch reads the order desk's raw URL query (ParseQuery):
// "event" (an event id), "q", "status" (an order status) and "after" (a
// cursor), and returns the parameters it could read (to show in the filters
// form) with the search. Errors: EBADREQUEST with Fields naming every
// parameter that cannot be read, at once, including a pair that is not
// valid percent-encoding and one of those four given more than once.
func ParseOrderSearch(rawQuery string) (OrderSearch, url.Values, error) {
	q, f := ParseQuery(rawQuery, "event", "q", "status", "after")
	if _, ok := f["after"]; ok {
		f["after"] = M("err_bad_cursor")
	}
	s := OrderSearch{Query: strings.TrimSpace(q.Get("q")), Status: OrderStatus(strings.TrimSpace(q.Get("status")))}
	if ev := strings.TrimSpace(q.Get("event")); ev != "" {
		id, err := strconv.ParseInt(ev, 10, 64)
		if err != nil || id <= 0 {
			f["event"] = M("val_filter_event", "Value", ClipInput(ev, MaxQuoted))
		}
		s.EventID = id
	}
	if s.Status != "" && !slices.Contains(OrderStatuses, s.Status) {
		f["status"] = M("val_filter_status", "Value", ClipInput(string(s.Status), MaxQuoted))
	}
	if len(s.Query) > 254 {
		f["q"] = M("val_filter_query")
	}
	if after := q.Get("after"); after != "" {
		c, err := ParseOrderCursor(after)
		if err != nil {
			f["after"] = M("err_bad_cursor")
		}
		s.After = &c
	}
	if len(f) > 0 {
		return OrderSearch{}, q, &Error{Code: EBADREQUEST, Msg: M("err_bad_filters"), Fields: f}
	}
	return s, q, nil
}

// OrderListing is an order as the order desk lists it: the order with its
// items (no tickets) and its buyer's e-mail.
type OrderListing struct {
	Order *Order
	Buyer string
}

// OrderPage is one page of the order desk's search, newest first. Next is
// the cursor of the following page, nil on the last.
type OrderPage struct {
	Orders []OrderListing
	Next   *OrderCursor
}

// OrderLine is one seat of one order, a line of the event's export
// (GET /admin/events/{id}/orders.csv). Price is in the minor unit of
// Currency. PaidAt is when the order was confirmed, RefundedAt when this
// seat's refund was done (or, for an order refunded whole because nothing
// could be sold, when that happened); nil when not.
type OrderLine struct {
	OrderID    string
	Status     OrderStatus
	Buyer      string
	Seat       string
	Grade      string
	Price      int64
	Currency   string
	PaidAt     *time.Time
	RefundedAt *time.Time
}

// OrderDesk is what the order desk reads. Its methods are safe for
// concurrent use.
type OrderDesk interface {
	// SearchOrders returns one page of the orders s finds, newest first.
	SearchOrders(ctx context.Context, s OrderSearch) (*OrderPage, error)
	// EachOrderLine calls fn with every order line of the event, by order
	// (oldest first) and seat, as PostgreSQL sends them: at no time are
	// they all in memory. It stops at fn's first error and returns it.
	EachOrderLine(ctx context.Context, eventID int64, fn func(OrderLine) error) error
}

// OrderLineHeader is the header row of the order lines' CSV.
var OrderLineHeader = []string{"order", "status", "buyer", "seat", "grade", "price", "currency", "paid_at", "refunded_at"}

// OrderLineWriter writes order lines as CSV (RFC 4180, through
// encoding/csv): OrderLineHeader, then one row per line. Times are RFC 3339
// in the event's time zone (with its offset of that moment), "" when nil;
// price is an integer in the currency's minor unit. A cell that a
// spreadsheet would take for a formula (one starting with =, +, -, @, a tab
// or a carriage return; OWASP "CSV Injection") is prefixed with a single
// quote, so that a buyer's e-mail such as "=HYPERLINK(...)@x.com" stays
// text.
type OrderLineWriter struct {
	w   *csv.Writer
	loc *time.Location
}

// NewOrderLineWriter returns a writer to w for an event in the time zone
// loc, having written the header row (buffered: Flush sends it).
func NewOrderLineWriter(w io.Writer, loc *time.Location) (*OrderLineWriter, error) {
	lw := &OrderLineWriter{w: csv.NewWriter(w), loc: loc}
	return lw, lw.w.Write(OrderLineHeader)
}

// Write writes one line (buffered).
func (lw *OrderLineWriter) Write(l OrderLine) error {
	return lw.w.Write([]string{
		safeCell(l.OrderID), safeCell(string(l.Status)), safeCell(l.Buyer), safeCell(l.Seat), safeCell(l.Grade),
		strconv.FormatInt(l.Price, 10), safeCell(l.Currency), lw.time(l.PaidAt), lw.time(l.RefundedAt),
	})
}

// Flush writes what is buffered to the underlying writer and returns the
// first error of any write.
func (lw *OrderLineWriter) Flush() error {
	lw.w.Flush()
	return lw.w.Error()
}

func (lw *OrderLineWriter) time(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.In(lw.loc).Format(time.RFC3339)
}

// safeCell neutralises a cell that a spreadsheet would run as a formula.
func safeCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
