package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

// OutboxTopicOrderRefunded is the outbox topic of a refund; its payload is an
// OrderRefundedEvent.
const OutboxTopicOrderRefunded = "order.refunded"

// OrderRefundedEvent is the outbox payload written with a refund, as JSON.
// Amount is in minor units; Status is the order's after the refund.
type OrderRefundedEvent struct {
	OrderID   string                `json:"order_id"`
	RefundID  string                `json:"refund_id"`
	EventID   int64                 `json:"event_id"`
	AccountID int64                 `json:"account_id"`
	Amount    int64                 `json:"amount"`
	Seats     []string              `json:"seats"`
	Status    boxoffice.OrderStatus `json:"status"`
	At        time.Time             `json:"at"`
}

// Refunds keeps the refunds of confirmed orders' tickets, asked by an admin
// or made at the PG, in PostgreSQL: the database's steps of a refund, each
// one transaction, which package checkout runs around its call to the PG
// (it never talks to the PG itself). Each refund frees each of its seats
// once and gives the buyer's limit back once, whatever runs at the same
// time:
//
//  1. Reserve (or RecordPGCancel for one made at the PG) locks the order,
//     checks it is CONFIRMED and that the seats are its tickets and in no
//     other refund (refund_item is UNIQUE per order and seat), and records
//     the refund pending with its amount, the sum of the seats' prices (so
//     the money refunded never passes what was paid);
//  2. the caller asks the PG, once per refund id;
//  3. Apply applies it, if it is still pending (a conditional UPDATE: once,
//     whoever applies it, the caller, a retry or the PG's webhook): the
//     tickets are marked refunded, the sold seats deleted, the account's
//     purchase count lowered, the order REFUNDED when no ticket is left, the
//     payment's status updated, and the outbox and audit rows written; after
//     the commit the seats leave Redis's sold-seat copy (Holds.unsell). Fail
//     records a refusal of the PG instead (nothing else changes; the reason
//     is kept and shown).
//
// Set the fields before first use; safe for concurrent use.
type Refunds struct {
	DB    *DB
	Holds *Holds
	// Logger receives what the after-commit steps could not do
	// (slog.Default when nil).
	Logger *slog.Logger
}

func (s *Refunds) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// PendingRefund is a refund recorded pending, to be asked of the PG (or,
// Source "pg", only applied): its id, the order and the payment it returns
// money of, its reason, and Amount, the sum of its seats' prices in the
// minor unit of the order's currency.
type PendingRefund struct {
	ID, OrderID, PaymentKey, Reason string
	Source                          string // "admin" or "pg"
	Amount                          boxoffice.Money
}

// Reserve validates req and records its refund pending (step 1 of
// Refunds): req.Seats of the confirmed order req.OrderID, or all its tickets
// not refunded yet when none are named.
//
// Errors, with nothing changed: EINVALID (Fields "reason", "seat": an empty
// or long reason, a seat named twice or not in the order, all at once);
// ENOTFOUND (no such order); ECONFLICT when the order is not CONFIRMED, or a
// seat was refunded already (Details["seats"]) or is in a refund under way.
func (s *Refunds) Reserve(ctx context.Context, req boxoffice.RefundRequest) (PendingRefund, error) {
	// The request's own faults are told together with the seats not in the
	// order, which only the transaction knows.
	invalid := map[string]boxoffice.Msg{}
	if err := req.Validate(); err != nil {
		var e *boxoffice.Error
		if !errors.As(err, &e) || e.Fields == nil {
			return PendingRefund{}, err
		}
		maps.Copy(invalid, e.Fields)
	}
	var r PendingRefund
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		r, err = reserveRefund(ctx, tx, req, invalid, s.DB.Now())
		return err
	})
	if err != nil {
		return PendingRefund{}, fmt.Errorf("refund order %s: %w", req.OrderID, err)
	}
	return r, nil
}

// reserveRefund is Reserve's transaction; invalid holds the request's own
// faults (Validate's Fields), refused together with seats not in the order.
func reserveRefund(ctx context.Context, tx pgx.Tx, req boxoffice.RefundRequest, invalid map[string]boxoffice.Msg, now time.Time) (PendingRefund, error) {
	r := PendingRefund{ID: newOrderID(), OrderID: req.OrderID, Reason: req.Reason, Source: "admin"}
	var status boxoffice.OrderStatus
	err := tx.QueryRow(ctx, `SELECT status, currency FROM orders WHERE id = $1 FOR NO KEY UPDATE`, req.OrderID).Scan(&status, &r.Amount.Currency)
	if err != nil {
		return r, notFound(err, "err_no_order")
	}
	rows, err := tx.Query(ctx, `
		SELECT i.seat_label, i.price, COALESCE(r.status, '') FROM order_item i
		LEFT JOIN refund_item ri ON ri.order_id = i.order_id AND ri.seat_label = i.seat_label
		LEFT JOIN refund r ON r.id = ri.refund_id
		WHERE i.order_id = $1 ORDER BY i.seat_label`, req.OrderID)
	if err != nil {
		return r, fmt.Errorf("order items: %w", err)
	}
	type item struct {
		price  int64
		refund string
	}
	items := map[string]item{}
	var labels []string
	var label string
	var it item
	if _, err := pgx.ForEachRow(rows, []any{&label, &it.price, &it.refund}, func() error {
		items[label] = it
		labels = append(labels, label)
		return nil
	}); err != nil {
		return r, fmt.Errorf("order items: %w", err)
	}
	seats := req.Seats
	if len(seats) == 0 {
		for _, l := range labels {
			if items[l].refund != "done" {
				seats = append(seats, l)
			}
		}
	}
	var unknown, refunded, underway []string
	for _, l := range seats {
		switch it, ok := items[l]; {
		case !ok:
			unknown = append(unknown, boxoffice.ClipInput(l, boxoffice.MaxQuoted))
		case it.refund == "done":
			refunded = append(refunded, l)
		case it.refund == "pending":
			underway = append(underway, l)
		}
	}
	if _, ok := invalid["seat"]; len(unknown) > 0 && !ok {
		invalid["seat"] = boxoffice.M("refund_seat_not_in_order", "Seats", strings.Join(unknown, ", "))
	}
	switch {
	case len(invalid) > 0:
		return r, boxoffice.Invalid(invalid)
	case status != boxoffice.OrderConfirmed:
		return r, boxoffice.NewError(boxoffice.ECONFLICT, "refund_not_confirmed", "Status", status.Msg())
	case len(refunded) > 0:
		return r, &boxoffice.Error{Code: boxoffice.ECONFLICT, Msg: boxoffice.M("refund_seat_refunded", "Seats", strings.Join(refunded, ", ")),
			Details: map[string]any{"seats": refunded}}
	case len(underway) > 0:
		return r, &boxoffice.Error{Code: boxoffice.ECONFLICT, Msg: boxoffice.M("refund_under_way", "Seats", strings.Join(underway, ", ")),
			Details: map[string]any{"seats": underway}}
	}
	for _, l := range seats {
		r.Amount.Amount += items[l].price
	}
	err = tx.QueryRow(ctx, `SELECT payment_key FROM payment WHERE order_id = $1 AND outcome = 'confirmed'`, req.OrderID).Scan(&r.PaymentKey)
	if err != nil {
		return r, fmt.Errorf("confirmed payment of order %s: %w", req.OrderID, err)
	}
	return r, insertRefund(ctx, tx, r, req.AdminID, seats, now)
}

// insertRefund records a pending refund of seats; a seat in another pending
// or done refund violates refund_item's UNIQUE key (the callers hold the
// order's lock and checked, so that is a bug).
func insertRefund(ctx context.Context, tx pgx.Tx, r PendingRefund, adminID int64, seats []string, now time.Time) error {
	var admin *int64
	if adminID != 0 {
		admin = &adminID
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO refund (id, order_id, payment_key, amount, reason, source, admin_id, status, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8)`,
		r.ID, r.OrderID, r.PaymentKey, r.Amount.Amount, r.Reason, r.Source, admin, now)
	if err != nil {
		return fmt.Errorf("record refund: %w", err)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO refund_item (refund_id, order_id, seat_label, price)
		SELECT $1, order_id, seat_label, price FROM order_item WHERE order_id = $2 AND seat_label = ANY($3)`,
		r.ID, r.OrderID, seats)
	if err != nil {
		return fmt.Errorf("record refund items: %w", err)
	}
	return nil
}

// applied is what applying a refund did.
type applied struct {
	eventID, accountID int64
	seats              []string
	result             boxoffice.RefundResult
	now                bool // this call applied it (false: applied before)
}

// Apply applies a pending refund that the PG made (pgStatus: the payment's
// status at the PG after it), once, then takes its seats out of Redis's
// sold-seat copy, and returns the order's status after it, the amount it
// returned and its seats; a repeat returns the same. Errors: ENOTFOUND (no
// such refund); ECONFLICT (the refund failed before).
func (s *Refunds) Apply(ctx context.Context, refundID string, pgStatus boxoffice.PaymentStatus) (*boxoffice.RefundResult, error) {
	var a applied
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		a, err = applyRefund(ctx, tx, refundID, pgStatus, s.DB.Now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("apply refund %s: %w", refundID, err)
	}
	if a.now {
		if err := s.Holds.unsell(ctx, a.eventID, a.accountID, a.seats); err != nil {
			s.logger().Error("refund: free the seats in Redis (they show as sold until the event's keys are rebuilt)",
				"refund_id", refundID, "seats", a.seats, "err", err)
		}
	}
	return &a.result, nil
}

// applyRefund is step 3 of a refund, in tx: see Refunds.
func applyRefund(ctx context.Context, tx pgx.Tx, refundID string, pgStatus boxoffice.PaymentStatus, now time.Time) (applied, error) {
	var a applied
	var adminID *int64
	err := tx.QueryRow(ctx, `
		SELECT o.id, o.event_id, o.account_id, r.admin_id, ARRAY(SELECT seat_label FROM refund_item WHERE refund_id = r.id ORDER BY seat_label)
		FROM refund r JOIN orders o ON o.id = r.order_id WHERE r.id = $1`, refundID).
		Scan(&a.result.OrderID, &a.eventID, &a.accountID, &adminID, &a.seats)
	if err != nil {
		return a, notFound(err, "err_no_order")
	}
	// The confirmation's order of locks: purchase_count, then the order.
	if err := lockPurchases(ctx, tx, a.eventID, a.accountID); err != nil {
		return a, err
	}
	var before boxoffice.OrderStatus
	if err := tx.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1 FOR NO KEY UPDATE`, a.result.OrderID).Scan(&before); err != nil {
		return a, fmt.Errorf("lock order: %w", err)
	}
	err = tx.QueryRow(ctx, `UPDATE refund SET status = 'done', done_at = $2 WHERE id = $1 AND status = 'pending' RETURNING amount`,
		refundID, now).Scan(&a.result.RefundedAmount)
	if errors.Is(err, pgx.ErrNoRows) {
		a.result.Status, a.result.Seats = before, a.seats
		err = tx.QueryRow(ctx, `SELECT amount FROM refund WHERE id = $1 AND status = 'done'`, refundID).Scan(&a.result.RefundedAmount)
		if err != nil {
			return a, boxoffice.NewError(boxoffice.ECONFLICT, "refund_failed_before")
		}
		return a, nil
	} else if err != nil {
		return a, fmt.Errorf("mark refund done: %w", err)
	}
	a.now, a.result.Seats = true, a.seats
	tag, err := tx.Exec(ctx, `UPDATE ticket SET refunded_at = $3 WHERE order_id = $1 AND seat_label = ANY($2) AND refunded_at IS NULL`,
		a.result.OrderID, a.seats, now)
	if err != nil {
		return a, fmt.Errorf("refund tickets: %w", err)
	}
	if int(tag.RowsAffected()) != len(a.seats) {
		return a, fmt.Errorf("refund %s: %d of %d tickets were live", refundID, tag.RowsAffected(), len(a.seats))
	}
	if _, err := tx.Exec(ctx, `DELETE FROM sold_seat WHERE order_id = $1 AND seat_label = ANY($2)`, a.result.OrderID, a.seats); err != nil {
		return a, fmt.Errorf("free sold seats: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE purchase_count SET tickets = tickets - $3 WHERE event_id = $1 AND account_id = $2`,
		a.eventID, a.accountID, len(a.seats)); err != nil {
		return a, fmt.Errorf("give the limit back: %w", err)
	}
	err = tx.QueryRow(ctx, `
		UPDATE orders SET status = CASE WHEN EXISTS (SELECT 1 FROM ticket WHERE order_id = $1 AND refunded_at IS NULL)
			THEN status ELSE 'REFUNDED' END, updated_at = $2
		WHERE id = $1 RETURNING status`, a.result.OrderID, now).Scan(&a.result.Status)
	if err != nil {
		return a, fmt.Errorf("order after refund: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE payment SET status = $2, updated_at = $3, outcome = CASE WHEN $4 THEN 'refunded' ELSE outcome END
		WHERE order_id = $1 AND outcome = 'confirmed'`,
		a.result.OrderID, pgStatus, now, a.result.Status == boxoffice.OrderRefunded); err != nil {
		return a, fmt.Errorf("payment after refund: %w", err)
	}
	payload, err := json.Marshal(OrderRefundedEvent{
		OrderID: a.result.OrderID, RefundID: refundID, EventID: a.eventID, AccountID: a.accountID,
		Amount: a.result.RefundedAmount, Seats: a.seats, Status: a.result.Status, At: now.UTC(),
	})
	if err != nil {
		return a, fmt.Errorf("outbox payload: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO outbox (topic, payload, created_at) VALUES ($1, $2, $3)`,
		OutboxTopicOrderRefunded, payload, now); err != nil {
		return a, fmt.Errorf("write outbox: %w", err)
	}
	err = writeAudit(ctx, tx, auditEntry{
		AdminID: adminID, Action: AuditRefund, EventID: a.eventID, OrderID: a.result.OrderID, Seats: a.seats,
		Before: map[string]any{"status": before},
		After:  map[string]any{"status": a.result.Status, "refund_id": refundID, "amount": a.result.RefundedAmount},
	}, now)
	return a, err
}

// Fail records that the PG refused a pending refund: it becomes failed with
// failure (the PG's code and message), its seats are free to be refunded
// again, and nothing else changes. A refund applied or failed before stays
// as it is.
func (s *Refunds) Fail(ctx context.Context, refundID, failure string) error {
	now := s.DB.Now()
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var orderID string
		var eventID int64
		var adminID *int64
		var seats []string
		err := tx.QueryRow(ctx, `
			UPDATE refund r SET status = 'failed', failure = $2, done_at = $3 FROM orders o
			WHERE r.id = $1 AND r.status = 'pending' AND o.id = r.order_id
			RETURNING r.order_id, o.event_id, r.admin_id, ARRAY(SELECT seat_label FROM refund_item WHERE refund_id = r.id ORDER BY seat_label)`,
			refundID, failure, now).Scan(&orderID, &eventID, &adminID, &seats)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // applied or failed meanwhile
		} else if err != nil {
			return fmt.Errorf("fail refund: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM refund_item WHERE refund_id = $1`, refundID); err != nil {
			return fmt.Errorf("fail refund: %w", err)
		}
		return writeAudit(ctx, tx, auditEntry{
			AdminID: adminID, Action: AuditRefundFailed, EventID: eventID, OrderID: orderID, Seats: seats,
			After: map[string]any{"refund_id": refundID, "failure": failure},
		}, now)
	})
	if err != nil {
		return fmt.Errorf("fail refund %s: %w", refundID, err)
	}
	return nil
}

// FindRefunds returns the order's refunds, oldest first, each with its
// seats (a failed refund's seats are not kept).
func (s *Refunds) FindRefunds(ctx context.Context, orderID string) ([]boxoffice.Refund, error) {
	rows, err := s.DB.Pool.Query(ctx, `
		SELECT r.id, r.order_id, r.amount, r.reason, r.source, r.admin_id, r.status, r.failure, r.created_at, r.done_at,
		       ARRAY(SELECT seat_label FROM refund_item WHERE refund_id = r.id ORDER BY seat_label)
		FROM refund r WHERE r.order_id = $1 ORDER BY r.created_at, r.id`, orderID)
	if err != nil {
		return nil, fmt.Errorf("refunds of order %s: %w", orderID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.Refund, error) {
		var r boxoffice.Refund
		err := row.Scan(&r.ID, &r.OrderID, &r.Amount, &r.Reason, &r.Source, &r.AdminID, &r.Status, &r.Failure, &r.CreatedAt, &r.DoneAt, &r.Seats)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("refunds of order %s: %w", orderID, err)
	}
	return out, nil
}
