package boxoffice

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OrderStatus is where an order stands (CONTRACT.md "Order statuses").
type OrderStatus string

// Order statuses.
const (
	// OrderPendingPayment: created at checkout, its seats held, waiting for
	// the PG's payment until ExpiresAt.
	OrderPendingPayment OrderStatus = "PENDING_PAYMENT"
	// OrderConfirmed: paid; its seats are sold and its tickets issued. Final.
	OrderConfirmed OrderStatus = "CONFIRMED"
	// OrderFailed: refused before any money moved, for example because the
	// amount in the PG's redirect was not the order's.
	OrderFailed OrderStatus = "FAILED"
	// OrderExpired: not paid within the payment window; its holds are
	// released. A payment arriving later may still confirm it.
	OrderExpired OrderStatus = "EXPIRED"
	// OrderCancelled: given up before payment: its holds ended at checkout
	// (hold_lost), or a newer checkout of the account replaced it (replaced).
	OrderCancelled OrderStatus = "CANCELLED"
	// OrderRefunded: paid, but nothing could be sold (the seats were taken or
	// the account's limit would be passed), so the payment is refunded. Final.
	OrderRefunded OrderStatus = "REFUNDED"
)

// DefaultPaymentWindow is how long an order waits for its payment: its
// expiry, and how far checkout extends its holds.
const DefaultPaymentWindow = 10 * time.Minute

// orderMoves lists, for each status, the statuses an order may move to.
// CONFIRMED and REFUNDED move nowhere: a failure or a late message never
// undoes a sale. An order that may still be paid (pending or expired) may be
// confirmed, refunded, failed or cancelled (replaced by the account's newer
// order); one refused or given up may only be refunded (a payment that
// arrives for it anyway is returned).
var orderMoves = map[OrderStatus][]OrderStatus{
	OrderPendingPayment: {OrderConfirmed, OrderFailed, OrderExpired, OrderCancelled, OrderRefunded},
	OrderExpired:        {OrderConfirmed, OrderFailed, OrderCancelled, OrderRefunded},
	OrderFailed:         {OrderRefunded},
	OrderCancelled:      {OrderRefunded},
	OrderConfirmed:      nil,
	OrderRefunded:       nil,
}

// OrderStatuses lists every order status.
var OrderStatuses = []OrderStatus{
	OrderPendingPayment, OrderConfirmed, OrderFailed, OrderExpired, OrderCancelled, OrderRefunded,
}

// CanBecome reports whether an order in status s may move to status to. A
// status never "moves" to itself.
func (s OrderStatus) CanBecome(to OrderStatus) bool {
	return slices.Contains(orderMoves[s], to)
}

// Msg names status s for people (the catalogs' order_status_*), so that no
// sentence shows the code itself; an unknown status is its code, quoted.
func (s OrderStatus) Msg() Msg {
	switch s {
	case OrderPendingPayment:
		return M("order_status_pending")
	case OrderConfirmed:
		return M("order_status_confirmed")
	case OrderFailed:
		return M("order_status_failed")
	case OrderExpired:
		return M("order_status_expired")
	case OrderCancelled:
		return M("order_status_cancelled")
	case OrderRefunded:
		return M("order_status_refunded")
	}
	return M("order_status_unknown", "Code", string(s))
}

// Final reports whether no status change may follow s.
func (s OrderStatus) Final() bool {
	return len(orderMoves[s]) == 0
}

// OrderStatusesBefore returns the statuses from which an order may move to
// to, in OrderStatuses' order: the store's conditional UPDATEs name them in
// their WHERE clause, so that the database applies exactly CanBecome.
func OrderStatusesBefore(to OrderStatus) []OrderStatus {
	var from []OrderStatus
	for _, s := range OrderStatuses {
		if s.CanBecome(to) {
			from = append(from, s)
		}
	}
	return from
}

// Reasons an order failed or was refunded, or a payment was rejected or
// refunded: Order.FailureCode and Confirmation.Reason. Views turn them into
// sentences.
const (
	ReasonAmountMismatch = "amount_mismatch" // the PG's (or redirect's) amount is not the order's
	ReasonSeatTaken      = "seat_taken"      // a seat was sold to, or is held by, another account
	ReasonLimitExceeded  = "limit_exceeded"  // the account would pass the event's limit
	ReasonAlreadyPaid    = "already_paid"    // the order was paid by another payment
	ReasonOrderClosed    = "order_closed"    // the order had failed or was given up
	ReasonPaymentFailed  = "payment_failed"  // the PG refused the payment (a card refusal, say)
	ReasonHoldLost       = "hold_lost"       // the holds ended while checking out
	ReasonReplaced       = "replaced"        // the account's newer order of the event replaced it
)

// ClosedReason is the reason a payment that arrives for an order that can no
// longer be paid (status, with its failure code) is refused or refunded:
// replaced when the account's newer order replaced it, order_closed
// otherwise.
func ClosedReason(failureCode string) string {
	if failureCode == ReasonReplaced {
		return ReasonReplaced
	}
	return ReasonOrderClosed
}

// Order is a fan's purchase of seats of one event. Amount is the sum of the
// items' prices with the event's currency (in its minor unit, ISO 4217),
// computed by the server from its own prices; the items' prices are in that
// currency too. FailureCode (a Reason constant) and FailureMessage (detail
// for operators) say why an order failed or was refunded, or why its last
// payment was refused while it stays payable. Items are ordered by seat;
// Tickets exist once the order is CONFIRMED.
type Order struct {
	ID             string
	EventID        int64
	EventTitle     Text
	VenueName      string
	StartsAt       time.Time // the event's start
	TimeZone       string    // the event's IANA zone, for showing times
	AccountID      int64
	Status         OrderStatus
	Amount         Money
	Name           string // what the PG shows the buyer, such as "Concert, 2 seats"
	ExpiresAt      time.Time
	FailureCode    string
	FailureMessage string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ConfirmedAt    *time.Time
	// Charged reports whether some payment of the order moved money (it
	// was confirmed at the PG, whether it paid the order or is refunded),
	// so that a failed order tells a refund from nothing charged.
	Charged bool
	Items   []OrderItem
	Tickets []Ticket
}

// Seats returns the labels of the order's seats, in item order.
func (o *Order) Seats() []string {
	out := make([]string, len(o.Items))
	for i, it := range o.Items {
		out[i] = it.Seat
	}
	return out
}

// Payable reports whether the buyer may still pay for the order at now: it
// is pending and its payment window has not closed.
func (o *Order) Payable(now time.Time) bool {
	return o.Status == OrderPendingPayment && now.Before(o.ExpiresAt)
}

// OrderItem is one seat of an order with the price charged for it (minor
// units), taken from the seat's grade when the order was created. Section,
// Row and Number are the parts of the seat's label, and GradeName the
// grade's name per language, for saying the seat in words.
type OrderItem struct {
	Seat      string
	Grade     string
	Price     int64
	Section   string
	Row       string
	Number    string
	GradeName Text
}

// Item returns the order's item for the seat label, and whether it has one.
func (o *Order) Item(label string) (OrderItem, bool) {
	for _, it := range o.Items {
		if it.Seat == label {
			return it, true
		}
	}
	return OrderItem{}, false
}

// Ticket is the proof of one sold seat. Code is the signed ticket code that
// its QR code carries (see TicketCode).
type Ticket struct {
	ID      string // a UUID
	EventID int64
	Seat    string
	Code    string
}

// PaymentOutcome is what the confirmation routine decided for one PG payment.
type PaymentOutcome string

// Payment outcomes (the payment table's outcome column).
const (
	PaymentConfirmed     PaymentOutcome = "confirmed"      // it paid the order
	PaymentRefunded      PaymentOutcome = "refunded"       // it was cancelled at the PG
	PaymentRefundPending PaymentOutcome = "refund_pending" // it must be cancelled; the PG has not answered yet
	PaymentRejected      PaymentOutcome = "rejected"       // it was never confirmed (no money moved)
)

// Confirmation is the result of confirming a payment: the order as it stands
// afterwards, the payment's outcome and why (a Reason constant, "" when
// confirmed). Outcome is "" when no payment was recorded, as for a redirect
// whose amount was tampered with (the order failed without asking the PG).
// Every call for the same payment gets the same outcome back.
type Confirmation struct {
	Order      *Order
	PaymentKey string
	Outcome    PaymentOutcome
	Reason     string
}

// TicketCode returns the signed code of a ticket: "<ticket id>.<signature>",
// the signature being the first 16 bytes of HMAC-SHA256 (RFC 2104) with
// secret over "<ticket id>|<event id>|<seat>", base64url without padding. A
// door scanner that knows the secret checks it with VerifyTicketCode, without
// a database.
func TicketCode(secret []byte, t Ticket) string {
	return t.ID + "." + base64.RawURLEncoding.EncodeToString(ticketMAC(secret, t.ID, t.EventID, t.Seat))
}

// VerifyTicketCode reports whether code is the signed code of a ticket for
// the event's seat, and returns the ticket id it names.
func VerifyTicketCode(secret []byte, code string, eventID int64, seat string) (string, bool) {
	id, sig, ok := strings.Cut(code, ".")
	if !ok {
		return "", false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, ticketMAC(secret, id, eventID, seat)) {
		return "", false
	}
	return id, true
}

func ticketMAC(secret []byte, id string, eventID int64, seat string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id + "|" + strconv.FormatInt(eventID, 10) + "|" + seat))
	return m.Sum(nil)[:16]
}

// StuckOrder is an order an admin should look at, and why.
type StuckOrder struct {
	Order *Order
	// Why: "expiry_overdue" (still PENDING_PAYMENT past its expiry: the
	// expiry worker is behind or down) or "refund_pending" (a payment of it
	// must be refunded and the PG has not confirmed the refund).
	Why string
}

// OrderService creates orders at checkout and finds them (CheckoutService
// takes their payments). All methods are safe for concurrent use.
type OrderService interface {
	// CreateOrder makes an order of all the account's live holds for the
	// event, priced from the event's grades, PENDING_PAYMENT until the
	// payment window closes, and extends the holds to that expiry. Errors:
	// ENOHOLDS; ENOTFOUND (no such event); ECONFLICT (the sale is over);
	// ESEATTAKEN (a hold ended meanwhile; Details["seats"]).
	CreateOrder(ctx context.Context, eventID, accountID int64) (*Order, error)
	// FindOrderByID returns an order with its items and tickets. Errors: ENOTFOUND.
	FindOrderByID(ctx context.Context, id string) (*Order, error)
	// FindOrders returns the account's orders, newest first, with items and tickets.
	FindOrders(ctx context.Context, accountID int64) ([]*Order, error)
	// FindStuckOrders lists up to limit orders that should be settled but
	// are not (StuckOrder.Why says how), oldest first.
	FindStuckOrders(ctx context.Context, limit int) ([]StuckOrder, error)
}

// CheckoutService takes the payments of orders at the PG: it sends the buyer
// to the PG's payment window and confirms what the PG reports, once per
// payment whoever calls. Package checkout implements it: the PG's call
// first, then one database transaction, never a network call inside one.
// All methods are safe for concurrent use.
type CheckoutService interface {
	// Confirm confirms the payment of an order with the PG and records the
	// outcome, once whoever calls. redirect is the amount of the PG's
	// success redirect (which names no currency: minor units of the
	// order's currency), nil for callers without one; see checkout.Service.Confirm.
	Confirm(ctx context.Context, orderID, paymentKey string, redirect *int64) (*Confirmation, error)
	// ConfirmWebhook looks a payment a webhook named up at the PG and
	// confirms it (Confirm), acting on the PG's answer only.
	ConfirmWebhook(ctx context.Context, paymentKey, orderID string) (*Confirmation, error)
	// CheckoutURL returns where to send the buyer to pay for the order.
	CheckoutURL(o *Order) string
	// CheckoutRequest returns what the PG's payment window needs to take
	// the order's payment: its id, name, amount with currency, and the
	// success and fail URLs.
	CheckoutRequest(o *Order) CheckoutRequest
}
