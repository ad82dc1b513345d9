package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

var _ boxoffice.OrderService = (*Orders)(nil)

// Defaults of the reconciler's choice of orders (Orders.UnsettledOrders).
const (
	// DefaultReconcileGrace is how old an order must be before the
	// reconciler asks the PG about it, so that the buyer's redirect comes first.
	DefaultReconcileGrace = time.Minute
	// DefaultReconcileRecheck is how long the reconciler waits before it
	// asks the PG about the same order again.
	DefaultReconcileRecheck = 2 * time.Minute
	// DefaultReconcileLookback is how long after its expiry an order is still
	// asked about: a payment confirmed at the PG whose commit was lost shows
	// up within it.
	DefaultReconcileLookback = time.Hour
	// reconcileBatch bounds the orders, payments and refunds one look-up of
	// the reconciler or the refund retry returns.
	reconcileBatch = 100
	// expireBatch bounds the orders one ExpireOrders expires.
	expireBatch = 500
)

// Orders keeps orders and their payments in PostgreSQL and implements
// boxoffice.OrderService: checkout (CreateOrder), the database's steps of
// the confirmation (RecordUnconfirmed, RecordUnsold, ConfirmPayment,
// RecordRefunded, FailTampered, and the reconciler's look-ups), the expiry of
// unpaid orders (ExpireOrders) and the look-ups. It never talks to the PG:
// package checkout asks the PG first and then calls one of these steps, each
// one transaction. Set the fields before first use; it is safe for
// concurrent use by any number of goroutines and instances.
type Orders struct {
	DB    *DB
	Holds *Holds
	// TicketSecret signs ticket codes (boxoffice.TicketCode): SESSION_SECRET.
	TicketSecret []byte
	// PaymentWindow is how long an order waits for its payment
	// (boxoffice.DefaultPaymentWindow when 0), whole milliseconds.
	PaymentWindow time.Duration
	// Which orders UnsettledOrders returns to the reconciler; 0 means the
	// Default* value.
	ReconcileGrace, ReconcileRecheck, ReconcileLookback time.Duration
	// Which confirmed orders ConfirmedToRecheck returns; 0 means the
	// Default* value.
	ReconcileCancelLookback, ReconcileCancelRecheck time.Duration
	// Logger receives what the workers and the after-commit steps could
	// not do (slog.Default when nil).
	Logger *slog.Logger

	// beforeCommit, when set (tests), runs inside the confirmation
	// transaction just before it commits.
	beforeCommit func(orderID, paymentKey string)
	// beforeRelease, when set (tests), runs in ExpireOrders between its read
	// of a due order and the release of its holds.
	beforeRelease func(orderID string)
}

func (s *Orders) window() time.Duration {
	if s.PaymentWindow > 0 {
		return s.PaymentWindow
	}
	return boxoffice.DefaultPaymentWindow
}

func (s *Orders) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// newOrderID returns 128 random bits as 22 characters of base64url: an
// orderId as Toss wants it (6 to 64 of [A-Za-z0-9_-]) that nobody can guess.
func newOrderID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// orderName is the name the PG shows the buyer: the event's title and the
// number of seats, at most 100 characters (Toss's limit).
func orderName(title string, seats int) string {
	suffix := fmt.Sprintf(" × %d", seats)
	r := []rune(title)
	if room := 100 - len([]rune(suffix)); len(r) > room {
		r = append(r[:room-1], '…')
	}
	return string(r) + suffix
}

// CreateOrder makes an order of all the account's live holds for the event
// (Holds.MyHolds) in one transaction: the order, PENDING_PAYMENT until now +
// PaymentWindow, with one item per seat priced from the seat's grade in
// PostgreSQL (never from the browser), its amount (the sum, minor units) and
// the event's currency. The account's checkouts are serialised on its
// purchase_count row, and a payable order of exactly the same seats is
// returned again instead of a second one, so that a double click makes one
// order; otherwise the new order replaces the account's older unpaid orders
// of the event (queueInsertOrder). The transaction is two round trips, each
// one batch on one connection: BEGIN with checkoutLocked's reads and locks,
// then the order's writes with COMMIT. A new order is returned as the
// transaction wrote it (its event's parts read under the lock, its items
// from the insert), as FindOrderByID would read it but for the tickets (a
// payable order has none); a payable order found again is read after the
// COMMIT in the same round trip. After commit the holds, and the
// account's entry token with them, are extended to the order's expiry (one
// Redis round trip, ExtendHolds); if some ended meanwhile, the order is
// CANCELLED (hold_lost).
//
// Errors: ENOHOLDS (no live holds); ENOTFOUND (no such event); ECONFLICT
// (the event is not on sale or the sale has ended); ESEATTAKEN with
// Details["seats"] (holds that ended before they could be extended); and
// PostgreSQL's or Redis's (if the holds could not be extended, the order
// stays payable and a retry returns it).
func (s *Orders) CreateOrder(ctx context.Context, eventID, accountID int64) (*boxoffice.Order, error) {
	labels, _, err := s.Holds.MyHolds(ctx, eventID, accountID)
	if err != nil {
		return nil, err
	}
	if len(labels) == 0 {
		return nil, boxoffice.NewError(boxoffice.ENOHOLDS, "order_no_holds")
	}
	now := s.DB.Now()
	var o *boxoffice.Order
	err = s.DB.inBatchTx(ctx, func(c *pgx.Conn) error {
		ev, found, err := checkoutLocked(ctx, c, eventID, accountID, labels, now)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		if found == "" {
			o = ev
			o.ID, o.AccountID, o.Status = newOrderID(), accountID, boxoffice.OrderPendingPayment
			o.Name = orderName(ev.EventTitle.In(boxoffice.LangFromContext(ctx)), len(labels))
			at := now.Truncate(time.Microsecond).UTC() // as PostgreSQL stores it
			o.CreatedAt, o.UpdatedAt, o.ExpiresAt = at, at, now.Add(s.window()).Truncate(time.Microsecond).UTC()
			queueInsertOrder(b, o, labels, now)
			b.Queue(`COMMIT`)
			return sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
				if err := readInsertOrder(br, o, labels); err != nil {
					return err
				}
				if _, err := br.Exec(); err != nil {
					return fmt.Errorf("commit: %w", err)
				}
				return nil
			})
		}
		b.Queue(`COMMIT`)
		b.Queue(orderQuery+` WHERE o.id = $1`, found)
		queueItems(b, []string{found})
		return sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			if o, err = scanOrder(br.QueryRow()); err != nil {
				return fmt.Errorf("find order: %w", err)
			}
			return readItems(br, map[string]*boxoffice.Order{o.ID: o})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("create order: %w", err)
	}
	err = s.Holds.ExtendHolds(ctx, eventID, accountID, o.ID, labels, o.ExpiresAt.Sub(now).Truncate(time.Millisecond))
	if boxoffice.ErrorCode(err) == boxoffice.ESEATTAKEN {
		if _, cerr := s.DB.Pool.Exec(context.WithoutCancel(ctx), `
			UPDATE orders SET status = 'CANCELLED', failure_code = $2, failure_message = $3, updated_at = $4
			WHERE id = $1 AND status = ANY($5)`,
			o.ID, boxoffice.ReasonHoldLost, err.Error(), now, boxoffice.OrderStatusesBefore(boxoffice.OrderCancelled)); cerr != nil {
			s.logger().Error("cancel an order whose holds ended", "order_id", o.ID, "err", cerr)
		}
		return nil, err
	} else if err != nil {
		return nil, err // Redis is down: the order stays, and a retry returns it
	}
	return o, nil
}

// checkoutLocked is the first round trip of a checkout's transaction on c,
// one batch with BEGIN: it locks the account's purchase_count row
// (purchaseLockSQL: every checkout and confirmation of one account and
// event is serialised on it), then, under that lock, in one statement,
// reads the event, looks for a payable order of exactly these seats
// (returned, so that a double click makes one order) and for seats of
// labels sold meanwhile (the account's own older order was confirmed just
// before). It returns an order with the event's parts (EventID, EventTitle,
// VenueName, StartsAt, TimeZone and the currency) and the payable order's
// id, or "". Errors: ENOTFOUND (no such event); ECONFLICT (the event is not
// on sale or the sale has ended); ESEATTAKEN with Details["seats"] (seats
// sold).
func checkoutLocked(ctx context.Context, c *pgx.Conn, eventID, accountID int64, labels []string, now time.Time) (*boxoffice.Order, string, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(purchaseLockSQL, eventID, accountID)
	b.Queue(`
		SELECT e.title, (SELECT v.name FROM venue v WHERE v.id = e.venue_id), e.starts_at, e.time_zone, e.currency,
		       e.status, e.sale_ends_at, (
			SELECT o.id FROM orders o
			WHERE o.account_id = $1 AND o.event_id = $2 AND o.status = 'PENDING_PAYMENT' AND o.expires_at > $3
			  AND (SELECT count(*) FROM order_item i WHERE i.order_id = o.id) = cardinality($4::text[])
			  AND NOT EXISTS (SELECT 1 FROM order_item i WHERE i.order_id = o.id AND NOT i.seat_label = ANY($4))
			ORDER BY o.created_at DESC LIMIT 1
		), ARRAY(SELECT seat_label FROM sold_seat WHERE event_id = $2 AND seat_label = ANY($4) ORDER BY seat_label)
		FROM event e WHERE e.id = $2`, accountID, eventID, now, labels)
	o := &boxoffice.Order{EventID: eventID}
	var found *string
	err := sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("lock purchase count: %w", err)
		}
		var status string
		var saleEnds time.Time
		var sold []string
		if err := br.QueryRow().Scan(&o.EventTitle, &o.VenueName, &o.StartsAt, &o.TimeZone, &o.Amount.Currency,
			&status, &saleEnds, &found, &sold); err != nil {
			return notFound(err, "err_no_event")
		}
		if status != boxoffice.EventOnSale || !now.Before(saleEnds) {
			return boxoffice.NewError(boxoffice.ECONFLICT, "err_sale_ended")
		}
		if found == nil && len(sold) > 0 {
			return &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Msg: boxoffice.M("hold_ended_some"), Details: map[string]any{"seats": sold}}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	} else if found != nil {
		return o, *found, nil
	}
	o.StartsAt = o.StartsAt.UTC()
	return o, "", nil
}

// queueInsertOrder queues the writes of the new order o (its ID, EventID,
// AccountID, Name and ExpiresAt) in a checkout's transaction (after
// checkoutLocked, under the account's purchase_count lock), one statement
// that returns the order's items as queueItems reads them, which
// readInsertOrder reads: it inserts the order,
// priced from the seats' grades, unless a label is not a seat of the event,
// and its items; then, once the order exists, it makes the new order the
// only one of the account and event that may be paid, since the account's
// older orders that may still be paid (PENDING_PAYMENT, or EXPIRED and so
// payable late) become CANCELLED with the reason replaced, so that no seat
// is ever in two live orders (a payment that still arrives for one of them
// is refused or refunded with that reason, boxoffice.ClosedReason). An
// order that was not inserted changes nothing: the items' insert and the
// update take their rows from the order's insert. The seats and their
// prices are looked up once for both inserts (the items CTE, used twice, is
// computed once). The new order is not among the rows the update sees (the
// statement's snapshot is taken before its insert).
//
// The labels reach the seats' lookup as ARRAY(SELECT unnest(...)), an
// InitPlan whose length the planner cannot see in either plan: a plain
// ANY($n) is priced for the held seats (one to a few) in a custom plan and
// for ten in the generic one, so PostgreSQL planned the inserts again on
// every call; priced alike, the generic plan is kept after the fifth call,
// the same index probe of event_seat_pkey for each label.
func queueInsertOrder(b *pgx.Batch, o *boxoffice.Order, labels []string, now time.Time) {
	b.Queue(`
		WITH items AS (
			SELECT s.label, s.grade, g.price, s.section, s.row_label, s.number, g.name FROM event_seat s
			JOIN grade g ON g.event_id = s.event_id AND g.code = s.grade
			WHERE s.event_id = $2 AND s.label = ANY(ARRAY(SELECT unnest($4::text[])))
		), o AS (
			INSERT INTO orders (id, event_id, account_id, amount, currency, order_name, expires_at, created_at, updated_at)
			SELECT $1, $2, $3, (SELECT sum(price) FROM items), e.currency, $5, $6, $7, $7
			FROM event e WHERE e.id = $2 AND (SELECT count(*) FROM items) = cardinality($4::text[])
			RETURNING id
		), ordered AS (
			INSERT INTO order_item (order_id, event_id, seat_label, grade, price)
			SELECT o.id, $2, i.label, i.grade, i.price FROM o, items i
		), replaced AS (
			UPDATE orders SET status = 'CANCELLED', failure_code = $8, failure_message = $9, updated_at = $7
			WHERE account_id = $3 AND event_id = $2 AND status = ANY($10) AND id <> $1 AND EXISTS (SELECT 1 FROM o)
		)
		SELECT i.label, i.grade, i.price, i.section, i.row_label, i.number, i.name FROM o, items i
		ORDER BY i.section, i.row_label::int, i.number::int`,
		o.ID, o.EventID, o.AccountID, labels, o.Name, o.ExpiresAt, now,
		boxoffice.ReasonReplaced, "replaced by order "+o.ID, boxoffice.OrderStatusesBefore(boxoffice.OrderCancelled))
}

// readInsertOrder reads queueInsertOrder's result, the new order's items,
// into o, with its amount (their sum): an order that was not inserted (a
// label is not a seat of the event) is an error.
func readInsertOrder(br pgx.BatchResults, o *boxoffice.Order, labels []string) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("insert order: %w", err)
	}
	var it boxoffice.OrderItem
	_, err = pgx.ForEachRow(rows, []any{&it.Seat, &it.Grade, &it.Price, &it.Section, &it.Row, &it.Number, &it.GradeName}, func() error {
		o.Items = append(o.Items, it)
		o.Amount.Amount += it.Price
		it.GradeName = nil // the next row's name goes into a map of its own
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert order: %w", err)
	}
	if len(o.Items) != len(labels) {
		return fmt.Errorf("insert order: held seats %v are not all seats of event %d", labels, o.EventID)
	}
	return nil
}

// purchaseLockSQL takes the account's purchase_count row for the event
// ($1, $2), creating it, in one statement: every checkout and confirmation
// of one account and event is serialised on it. ON CONFLICT DO UPDATE locks
// the row it finds (FOR NO KEY UPDATE, the latest version, as an UPDATE
// would) before its WHERE, which is false, so the row is locked and not
// written; a row it inserts is the transaction's own until it commits (a
// rival's INSERT waits on its key). The tickets bought are read by a later
// statement of the transaction, whose snapshot has every transaction that
// held the lock before. It replaces an INSERT ... DO NOTHING and a SELECT
// ... FOR UPDATE: one statement a lock instead of two (docs/performance.md,
// "PostgreSQL's work per paid order, again"). A row is made only for an
// event that exists, so that checkout reads a missing event as such
// (checkoutLocked), never as a foreign key's error.
const purchaseLockSQL = `
	INSERT INTO purchase_count (event_id, account_id) SELECT id, $2 FROM event WHERE id = $1
	ON CONFLICT (event_id, account_id) DO UPDATE SET tickets = purchase_count.tickets WHERE false`

// lockPurchases takes the account's purchase_count row for the event
// (creating it) in one round trip (purchaseLockSQL).
func lockPurchases(ctx context.Context, tx pgx.Tx, eventID, accountID int64) error {
	if _, err := tx.Exec(ctx, purchaseLockSQL, eventID, accountID); err != nil {
		return fmt.Errorf("lock purchase count: %w", err)
	}
	return nil
}

// orderColumns are the columns scanOrder reads, from orders o JOIN event e.
const orderColumns = `o.id, o.event_id, e.title, (SELECT v.name FROM venue v WHERE v.id = e.venue_id), e.starts_at,
       e.time_zone, o.account_id, o.status, o.amount, o.currency,
       o.order_name, o.expires_at, o.failure_code, o.failure_message, o.created_at, o.updated_at, o.confirmed_at,
       EXISTS (SELECT 1 FROM payment p WHERE p.order_id = o.id AND p.outcome <> 'rejected')`

const orderQuery = `SELECT ` + orderColumns + ` FROM orders o JOIN event e ON e.id = o.event_id`

// scanOrder reads orderColumns, then extra destinations.
func scanOrder(row pgx.Row, extra ...any) (*boxoffice.Order, error) {
	var o boxoffice.Order
	dest := []any{&o.ID, &o.EventID, &o.EventTitle, &o.VenueName, &o.StartsAt, &o.TimeZone, &o.AccountID, &o.Status, &o.Amount.Amount, &o.Amount.Currency,
		&o.Name, &o.ExpiresAt, &o.FailureCode, &o.FailureMessage, &o.CreatedAt, &o.UpdatedAt, &o.ConfirmedAt, &o.Charged}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	for _, t := range []*time.Time{&o.StartsAt, &o.ExpiresAt, &o.CreatedAt, &o.UpdatedAt} {
		*t = t.UTC()
	}
	if o.ConfirmedAt != nil {
		t := o.ConfirmedAt.UTC()
		o.ConfirmedAt = &t
	}
	return &o, nil
}

// FindOrderByID returns the order with its event's venue and start, its
// items (by section, row and number, each with its seat's parts and grade
// name) and live tickets (not refunded), each with its signed code, read in
// one round trip (one batch, the order first: each statement sees what was
// committed when it ran). Errors: ENOTFOUND.
func (s *Orders) FindOrderByID(ctx context.Context, id string) (*boxoffice.Order, error) {
	b := &pgx.Batch{}
	b.Queue(orderQuery+` WHERE o.id = $1`, id)
	queueDetails(b, []string{id})
	br := s.DB.Pool.SendBatch(ctx, b)
	defer br.Close()
	o, err := scanOrder(br.QueryRow())
	if err != nil {
		return nil, fmt.Errorf("find order: %w", notFound(err, "err_no_order"))
	}
	if err := s.readDetails(br, []*boxoffice.Order{o}); err != nil {
		return nil, err
	}
	return o, br.Close()
}

// FindOrders returns the account's orders, newest first, with their items
// and tickets, from the replica when there is one (DB.Read): the list may
// be a moment late, while an order's own page (FindOrderByID) reads the
// primary.
func (s *Orders) FindOrders(ctx context.Context, accountID int64) ([]*boxoffice.Order, error) {
	rows, err := s.DB.reader().Query(ctx, orderQuery+` WHERE o.account_id = $1 ORDER BY o.created_at DESC, o.id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("find orders of account %d: %w", accountID, err)
	}
	orders, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*boxoffice.Order, error) { return scanOrder(row) })
	if err != nil {
		return nil, fmt.Errorf("find orders of account %d: %w", accountID, err)
	}
	if err := s.loadDetails(ctx, s.DB.reader(), orders); err != nil {
		return nil, err
	}
	return orders, nil
}

// batcher sends a batch: a pool, a connection or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// loadDetails fills the orders' items and tickets with one query on q
// (queueDetails).
func (s *Orders) loadDetails(ctx context.Context, q batcher, orders []*boxoffice.Order) error {
	if len(orders) == 0 {
		return nil
	}
	ids := make([]string, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	b := &pgx.Batch{}
	queueDetails(b, ids)
	br := q.SendBatch(ctx, b)
	defer br.Close()
	if err := s.readDetails(br, orders); err != nil {
		return err
	}
	return br.Close()
}

// queueDetails queues the query of the items of the orders ids, each with
// its seat's parts and grade name and its live ticket (not refunded), by
// section, row and number, which readDetails reads. Tickets are issued for
// their order's items only (Orders.sell), at most one live ticket a seat
// (ticket_live_seat), so the items' rows carry every live ticket once. The
// ticket is looked up per item by ticket_live_seat's whole key (LATERAL,
// LIMIT 1: the subquery stays one), a probe of one row whatever the
// table's statistics say: as a plain join, the generic plan that pgx's
// cached statement gets after its fifth use hashed every live ticket of the
// sale for each read, and looked up by order_id alone, a generic plan made
// while ticket was nearly empty read more than twice the buffers (README,
// "PostgreSQL's CPU per paid order" and "PostgreSQL's planning per paid
// order").
func queueDetails(b *pgx.Batch, ids []string) {
	where, arg := itemsWhere(ids)
	b.Queue(itemsSelect+`, t.id::text, t.event_id`+itemsFrom+`
		LEFT JOIN LATERAL (
			SELECT id, event_id FROM ticket
			WHERE event_id = i.event_id AND seat_label = i.seat_label AND order_id = i.order_id AND refunded_at IS NULL LIMIT 1
		) t ON true`+where, arg)
}

// The parts of the items' query (queueItems, queueDetails).
const (
	itemsSelect = `
		SELECT i.order_id, i.seat_label, i.grade, i.price, s.section, s.row_label, s.number, g.name`
	itemsFrom = `
		FROM order_item i
		JOIN event_seat s ON s.event_id = i.event_id AND s.label = i.seat_label
		JOIN grade g ON g.event_id = i.event_id AND g.code = s.grade`
	itemsOrder = `
		ORDER BY s.section, s.row_label::int, s.number::int`
)

// itemsWhere returns the items' query's WHERE and ORDER BY for the orders
// ids, and its argument $1: one order by "= $1" with the id, several by
// "= ANY($1)" with ids. One order is every read of the paying path, and
// PostgreSQL prices an array parameter's generic plan for ten elements, ten
// times the custom plan for one, so with ANY it planned the statement again
// on every call; with "= $1" the generic plan costs no more than a custom
// one and is kept after the fifth call.
func itemsWhere(ids []string) (string, any) {
	if len(ids) == 1 {
		return `
		WHERE i.order_id = $1` + itemsOrder, ids[0]
	}
	return `
		WHERE i.order_id = ANY($1)` + itemsOrder, ids
}

// queueItems queues the query of the items of the orders ids, each with
// its seat's parts and grade name, by section, row and number, which
// readItems reads.
func queueItems(b *pgx.Batch, ids []string) {
	where, arg := itemsWhere(ids)
	b.Queue(itemsSelect+itemsFrom+where, arg)
}

// readItems reads queueItems' result into the orders byID (by order id).
func readItems(br pgx.BatchResults, byID map[string]*boxoffice.Order) error {
	return readItemRows(br, byID, nil)
}

// readItemRows reads the rows of the items' query into the orders byID (by
// order id), each row's extra columns into extra, then calls each (if not
// nil) with the row's order and item.
func readItemRows(br pgx.BatchResults, byID map[string]*boxoffice.Order, each func(o *boxoffice.Order, it boxoffice.OrderItem), extra ...any) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("order items: %w", err)
	}
	var orderID string
	var it boxoffice.OrderItem
	dest := append([]any{&orderID, &it.Seat, &it.Grade, &it.Price, &it.Section, &it.Row, &it.Number, &it.GradeName}, extra...)
	_, err = pgx.ForEachRow(rows, dest, func() error {
		o := byID[orderID]
		o.Items = append(o.Items, it)
		if each != nil {
			each(o, it)
		}
		it.GradeName = nil // the next row's name goes into a map of its own
		return nil
	})
	if err != nil {
		return fmt.Errorf("order items: %w", err)
	}
	return nil
}

// readDetails reads queueDetails' result into the orders: their items and
// live tickets, each ticket with its signed code, in its seat's item's
// order (section, row, number).
func (s *Orders) readDetails(br pgx.BatchResults, orders []*boxoffice.Order) error {
	byID := make(map[string]*boxoffice.Order, len(orders))
	for _, o := range orders {
		byID[o.ID] = o
	}
	var ticketID *string
	var eventID *int64
	return readItemRows(br, byID, func(o *boxoffice.Order, it boxoffice.OrderItem) {
		if ticketID == nil {
			return
		}
		t := boxoffice.Ticket{ID: *ticketID, EventID: *eventID, Seat: it.Seat}
		t.Code = boxoffice.TicketCode(s.TicketSecret, t)
		o.Tickets = append(o.Tickets, t)
	}, &ticketID, &eventID)
}

// sortTickets puts the order's tickets in the order of their seats' items;
// a ticket whose seat is not an item (none should be) goes last, by seat.
func sortTickets(o *boxoffice.Order) {
	if len(o.Tickets) < 2 {
		return
	}
	pos := make(map[string]int, len(o.Items))
	for i, it := range o.Items {
		pos[it.Seat] = i
	}
	at := func(seat string) int {
		if i, ok := pos[seat]; ok {
			return i
		}
		return len(o.Items)
	}
	slices.SortFunc(o.Tickets, func(a, b boxoffice.Ticket) int {
		return cmp.Or(cmp.Compare(at(a.Seat), at(b.Seat)), strings.Compare(a.Seat, b.Seat))
	})
}

// expireTimeout bounds one ExpireOrders call.
const expireTimeout = time.Minute

// ExpireOrders expires the PENDING_PAYMENT orders whose expiry has passed
// (DB.Now), at most 500 per call, and returns how many it expired. An
// order's holds end before it reads EXPIRED, so that a fan who sees its order
// expired finds its seats free, not still its own (counted against its limit
// and taken into its next checkout, whose holds would then end under it):
//
//  1. it reads the due orders, skipping rows locked at that moment (a
//     confirmation deciding, another instance expiring), and for each the
//     seats whose holds go: all but seats of another payable order of the
//     account;
//  2. it ends those holds of the account in Redis (Holds.releaseOrder), only
//     the holds this order's checkout extended (a newer hold of the fan on
//     the same seat, taken or checked out again since the read, survives), at
//     most once per order and never after the order's confirmation claimed
//     its seats: another instance that read the order as due too must not
//     end, later, the holds that the fan took after seeing it EXPIRED, nor
//     may a call that read the order just before a late payment's
//     confirmation locked it end the claim that keeps its seats from rivals;
//  3. it moves those orders to EXPIRED with a conditional UPDATE (rows locked
//     then are skipped, as are orders confirmed or failed meanwhile).
//
// Between 2 and 3 the order is PENDING_PAYMENT past its expiry, which every
// reader already treats as not payable (a payment for it is confirmed as for
// an expired order). If Redis fails, the orders whose holds were not released
// stay PENDING_PAYMENT for a later call (their holds end by themselves
// meanwhile, with their TTL), and the error is returned.
func (s *Orders) ExpireOrders(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, expireTimeout)
	defer cancel()
	now := s.DB.Now()
	rows, err := s.DB.Pool.Query(ctx, `
		SELECT o.id, o.event_id, o.account_id, ARRAY(
			SELECT i.seat_label FROM order_item i WHERE i.order_id = o.id AND NOT EXISTS (
				SELECT 1 FROM order_item j JOIN orders p ON p.id = j.order_id
				WHERE p.account_id = o.account_id AND p.event_id = o.event_id AND j.seat_label = i.seat_label
				  AND p.id <> o.id AND p.status = 'PENDING_PAYMENT' AND p.expires_at > $1)
			ORDER BY i.seat_label)
		FROM orders o WHERE o.status = 'PENDING_PAYMENT' AND o.expires_at <= $1
		ORDER BY o.expires_at LIMIT $2 FOR NO KEY UPDATE OF o SKIP LOCKED`, now, expireBatch)
	if err != nil {
		return 0, fmt.Errorf("expire orders: %w", err)
	}
	type dueOrder struct {
		id               string
		event, accountID int64
		labels           []string
	}
	var due []dueOrder
	var d dueOrder
	if _, err := pgx.ForEachRow(rows, []any{&d.id, &d.event, &d.accountID, &d.labels}, func() error {
		due = append(due, d)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("expire orders: %w", err)
	}
	var released []string
	var releaseErr error
	for _, o := range due {
		if s.beforeRelease != nil {
			s.beforeRelease(o.id)
		}
		if len(o.labels) > 0 {
			if releaseErr = s.Holds.releaseOrder(ctx, o.event, o.accountID, o.id, o.labels); releaseErr != nil {
				break
			}
		}
		released = append(released, o.id)
	}
	if len(released) == 0 {
		return 0, releaseErr
	}
	tag, err := s.DB.Pool.Exec(ctx, `
		WITH due AS (
			SELECT id FROM orders WHERE id = ANY($1) AND status = 'PENDING_PAYMENT'
			FOR NO KEY UPDATE SKIP LOCKED
		)
		UPDATE orders o SET status = 'EXPIRED', updated_at = $2
		FROM due WHERE o.id = due.id AND o.status = ANY($3)`, released, now, boxoffice.OrderStatusesBefore(boxoffice.OrderExpired))
	if err != nil {
		return 0, fmt.Errorf("expire orders: %w", err)
	}
	if releaseErr != nil {
		return int(tag.RowsAffected()), fmt.Errorf("expire orders: %w", releaseErr)
	}
	return int(tag.RowsAffected()), nil
}

// FindStuckOrders lists up to limit orders that are not settled although
// they should be, oldest first: orders still PENDING_PAYMENT past their
// expiry, and orders with a payment whose refund the PG has not confirmed
// (checkout.Service.Reconcile retries those). Orders that the PG may hold an unknown payment
// for are found by the reconciler, which asks the PG.
func (s *Orders) FindStuckOrders(ctx context.Context, limit int) ([]boxoffice.StuckOrder, error) {
	rows, err := s.DB.Pool.Query(ctx, `SELECT `+orderColumns+`, w.why
		FROM orders o JOIN event e ON e.id = o.event_id,
		LATERAL (SELECT CASE WHEN EXISTS (SELECT 1 FROM payment p WHERE p.order_id = o.id AND p.outcome = 'refund_pending')
		                     THEN 'refund_pending' ELSE 'expiry_overdue' END AS why) w
		WHERE w.why = 'refund_pending' OR (o.status = 'PENDING_PAYMENT' AND o.expires_at < $1)
		ORDER BY o.created_at, o.id LIMIT $2`, s.DB.Now(), limit)
	if err != nil {
		return nil, fmt.Errorf("find stuck orders: %w", err)
	}
	defer rows.Close()
	var out []boxoffice.StuckOrder
	var orders []*boxoffice.Order
	for rows.Next() {
		var why string
		o, err := scanOrder(rows, &why)
		if err != nil {
			return nil, fmt.Errorf("find stuck orders: %w", err)
		}
		out, orders = append(out, boxoffice.StuckOrder{Order: o, Why: why}), append(orders, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find stuck orders: %w", err)
	}
	if err := s.loadDetails(ctx, s.DB.Pool, orders); err != nil {
		return nil, err
	}
	return out, nil
}
