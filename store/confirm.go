package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// OutboxTopicOrderConfirmed is the outbox topic of a confirmed order; its
// payload is an OrderConfirmedEvent.
const OutboxTopicOrderConfirmed = "order.confirmed"

// OrderConfirmedEvent is the outbox payload written with a confirmation, as
// JSON, for notifications and statistics. Amount is in minor units.
type OrderConfirmedEvent struct {
	OrderID     string          `json:"order_id"`
	EventID     int64           `json:"event_id"`
	AccountID   int64           `json:"account_id"`
	Amount      int64           `json:"amount"`
	Currency    string          `json:"currency"`
	PaymentKey  string          `json:"payment_key"`
	Seats       []string        `json:"seats"`
	Tickets     []TicketOfEvent `json:"tickets"`
	ConfirmedAt time.Time       `json:"confirmed_at"`
}

// TicketOfEvent is a ticket in an OrderConfirmedEvent.
type TicketOfEvent struct {
	ID   string `json:"id"`
	Seat string `json:"seat"`
}

// FailTampered moves the order to FAILED (amount_mismatch, detail for
// operators) because the PG's redirect named another amount than the
// order's, unless the order is past that (a confirmed order stays
// confirmed), and returns it with no payment (Outcome ""). The caller has
// made sure the PG knows the payment for this order.
func (s *Orders) FailTampered(ctx context.Context, orderID, detail string) (*boxoffice.Confirmation, error) {
	_, err := s.DB.Pool.Exec(ctx, `
		UPDATE orders SET status = 'FAILED', failure_code = $2, failure_message = $3, updated_at = $4
		WHERE id = $1 AND status = ANY($5)`,
		orderID, boxoffice.ReasonAmountMismatch, detail, s.DB.Now(), boxoffice.OrderStatusesBefore(boxoffice.OrderFailed))
	if err != nil {
		return nil, fmt.Errorf("fail order %s: %w", orderID, err)
	}
	o, err := s.FindOrderByID(ctx, orderID)
	if err != nil {
		return nil, err
	}
	return &boxoffice.Confirmation{Order: o}, nil
}

// Recorded returns the recorded result of the payment (see Result), nil if
// it has none or it was rejected: a rejected payment must be looked up
// again, since a confirm under way when it was rejected may have moved its
// money since. A result with Outcome refund_pending still needs its refund
// at the PG. Errors: EBADREQUEST for another order's payment.
func (s *Orders) Recorded(ctx context.Context, o *boxoffice.Order, paymentKey string) (*boxoffice.Confirmation, error) {
	var orderID string
	var outcome boxoffice.PaymentOutcome
	err := s.DB.Pool.QueryRow(ctx, `SELECT order_id, outcome FROM payment WHERE payment_key = $1`, paymentKey).
		Scan(&orderID, &outcome)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("look up payment %s: %w", paymentKey, err)
	case orderID != o.ID:
		return nil, boxoffice.NewError(boxoffice.EBADREQUEST, "err_payment_other_order")
	case outcome == boxoffice.PaymentRejected:
		return nil, nil
	}
	return s.Result(ctx, o.ID, paymentKey)
}

// insertPayment records the PG's payment for the order with an outcome, and
// reports false (changing nothing) when it is recorded already. A
// transaction recording the same payment waits for this one to end.
func insertPayment(ctx context.Context, tx pgx.Tx, orderID string, p *boxoffice.Payment, outcome boxoffice.PaymentOutcome, reason string, now time.Time) (bool, error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO payment (payment_key, order_id, amount, status, outcome, reason, approved_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (payment_key) DO NOTHING`,
		p.PaymentKey, orderID, p.TotalAmount, p.Status, outcome, reason, p.ApprovedAt, now)
	if err != nil {
		return false, fmt.Errorf("record payment %s: %w", p.PaymentKey, err)
	}
	return tag.RowsAffected() == 1, nil
}

// insertDonePayment is insertPayment for a payment the PG reports DONE. If
// the payment is recorded already as rejected (a caller looked it up while
// another's confirm was still under way at the PG, and saw it not yet
// confirmed), that record is wrong now that money moved: it becomes
// refund_pending, for the caller to refund. It reports whether it inserted.
func insertDonePayment(ctx context.Context, tx pgx.Tx, orderID string, p *boxoffice.Payment, outcome boxoffice.PaymentOutcome, reason string, now time.Time) (bool, error) {
	inserted, err := insertPayment(ctx, tx, orderID, p, outcome, reason, now)
	if err != nil || inserted {
		return inserted, err
	}
	return false, refundRejected(ctx, tx, p, now)
}

// refundRejected turns a record of the DONE payment as rejected into
// refund_pending (see insertDonePayment); any other record stays.
func refundRejected(ctx context.Context, tx pgx.Tx, p *boxoffice.Payment, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE payment SET outcome = 'refund_pending', status = $2, updated_at = $3
		WHERE payment_key = $1 AND outcome = 'rejected'`, p.PaymentKey, p.Status, now)
	if err != nil {
		return fmt.Errorf("refund a rejected payment the PG confirmed: %w", err)
	}
	return nil
}

// lockForConfirmation starts the confirmation transaction, its statements
// in one batch (one round trip): it records the DONE payment as rejected
// (decided later in the transaction; payment_key UNIQUE: a repeat waits for
// the first to end), then locks the account's purchase_count row, then the
// order row, so that one account's confirmations run one at a time. It
// returns whether it inserted the payment (if not, a record of it as
// rejected becomes refund_pending, as insertDonePayment does), the
// account's bought tickets, and the order's status and its event's limit.
func lockForConfirmation(ctx context.Context, tx pgx.Tx, o *boxoffice.Order, p *boxoffice.Payment, now time.Time) (bool, int, boxoffice.OrderStatus, int, error) {
	b := &pgx.Batch{}
	b.Queue(`
		INSERT INTO payment (payment_key, order_id, amount, status, outcome, reason, approved_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, 'rejected', '', $5, $6, $6) ON CONFLICT (payment_key) DO NOTHING`,
		p.PaymentKey, o.ID, p.TotalAmount, p.Status, p.ApprovedAt, now)
	queuePurchaseLock(b, o.EventID, o.AccountID)
	// NO KEY UPDATE: the payment rows of other transactions hold KEY SHARE
	// locks on the order (their foreign key), which FOR UPDATE would wait
	// for while they wait for purchase_count: a deadlock.
	b.Queue(`
		SELECT o.status, e.max_per_account FROM orders o JOIN event e ON e.id = o.event_id
		WHERE o.id = $1 FOR NO KEY UPDATE OF o`, o.ID)
	var inserted bool
	var tickets, limit int
	var status boxoffice.OrderStatus
	err := func() error {
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("record payment %s: %w", p.PaymentKey, err)
		}
		inserted = tag.RowsAffected() == 1
		if tickets, err = readPurchaseLock(br); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&status, &limit); err != nil {
			return fmt.Errorf("lock order: %w", err)
		}
		return br.Close()
	}()
	if err != nil {
		return false, 0, "", 0, err
	}
	if !inserted {
		if err := refundRejected(ctx, tx, p, now); err != nil {
			return false, 0, "", 0, err
		}
	}
	return inserted, tickets, status, limit, nil
}

// RecordUnconfirmed records a payment that sells nothing and needs no
// refund (rejected: never confirmed; refunded: cancelled at the PG by
// others). failOrder moves the order to FAILED with the reason; a payment
// that failed at the PG (payment_failed) leaves a payable order payable and
// notes why on it. A payment recorded already keeps its record. It returns
// the result as Result does.
func (s *Orders) RecordUnconfirmed(ctx context.Context, o *boxoffice.Order, p *boxoffice.Payment, outcome boxoffice.PaymentOutcome, reason, detail string, failOrder bool) (*boxoffice.Confirmation, error) {
	now := s.DB.Now()
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		inserted, err := insertPayment(ctx, tx, o.ID, p, outcome, reason, now)
		if err != nil || !inserted {
			return err
		}
		switch {
		case failOrder:
			_, err = tx.Exec(ctx, `
				UPDATE orders SET status = 'FAILED', failure_code = $2, failure_message = $3, updated_at = $4
				WHERE id = $1 AND status = ANY($5)`,
				o.ID, reason, detail, now, boxoffice.OrderStatusesBefore(boxoffice.OrderFailed))
		case reason == boxoffice.ReasonPaymentFailed:
			_, err = tx.Exec(ctx, `
				UPDATE orders SET failure_code = $2, failure_message = $3, updated_at = $4
				WHERE id = $1 AND status = ANY($5)`,
				o.ID, reason, detail, now, boxoffice.OrderStatusesBefore(boxoffice.OrderConfirmed))
		}
		if err != nil {
			return fmt.Errorf("update order %s: %w", o.ID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Result(ctx, o.ID, p.PaymentKey)
}

// RecordUnsold records a DONE payment that sells nothing as refund_pending
// (failing a payable order, which cannot be paid by it) and returns the
// result as Result does; the caller then cancels the payment at the PG
// (RecordRefunded once it did).
func (s *Orders) RecordUnsold(ctx context.Context, o *boxoffice.Order, p *boxoffice.Payment, reason, detail string) (*boxoffice.Confirmation, error) {
	now := s.DB.Now()
	var inserted bool
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if inserted, err = insertDonePayment(ctx, tx, o.ID, p, boxoffice.PaymentRefundPending, reason, now); err != nil || !inserted {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE orders SET status = 'FAILED', failure_code = $2, failure_message = $3, updated_at = $4
			WHERE id = $1 AND status = ANY($5)`,
			o.ID, reason, detail, now, boxoffice.OrderStatusesBefore(boxoffice.OrderFailed))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record payment %s: %w", p.PaymentKey, err)
	}
	return s.Result(ctx, o.ID, p.PaymentKey)
}

// ConfirmPayment settles a payment the PG reports DONE for exactly the
// order's amount (minor units of its currency), in three steps, so that no row lock is held across a call
// to Redis:
//
//  1. Before the transaction, the claim: if the order may still be paid (as
//     just read; an order that may not never may again), the seats are
//     claimed for the buyer in Redis (Holds.claimSeats, one Lua script, all
//     or nothing): none may be held by another account (the order's holds
//     may have expired, been released or lost), and from the claim on no
//     other account can hold them, until the sale is surely in Redis's
//     sold-seat cache. The transaction commits well within
//     claimCommitMargin of the claim, as the claim's length assumes.
//  2. The transaction, PostgreSQL only, in two round trips and the commit
//     (lockForConfirmation, then sell, each one pgx batch):
//     - record the payment (payment_key UNIQUE: a repeat waits for the
//     first and then returns its result; a record of it as rejected, made
//     while this confirm was under way at the PG, turns into a refund);
//     - lock the account's purchase_count row, then the order row, so that
//     one account's confirmations run one at a time;
//     - decide: the order must still be payable (not paid by another
//     payment, failed or given up), the account's bought tickets plus
//     these must stay within the event's limit, and the claim must have
//     found no seat held by another account;
//     - insert the sold_seat rows (UNIQUE per seat, in label order so that
//     concurrent sales cannot deadlock); a seat sold meanwhile rolls them
//     back to a savepoint;
//     - sold: move the order to CONFIRMED (a conditional UPDATE), count the
//     tickets in purchase_count, issue them (random UUIDs), write the
//     outbox row; not sold: record the payment refund_pending and move a
//     payable order to REFUNDED with the reason.
//  3. After the commit, in Redis: a sale is marked (Holds.MarkSold ends
//     every hold on the seats, the claim included; if it fails, the claim
//     keeps the seats from other accounts until the sold-seat cache's next
//     load has them). A repeat that found the payment recorded by another
//     call marks the sale again if it was one (MarkSold changes nothing the
//     second time; its claim may have come after the first MarkSold, and
//     must not leave the buyer holding seats sold to it). When nothing was
//     sold, the holds that the claim took (seats no hold of the buyer
//     covered) end at once, so that seats sold to nobody are free again,
//     while the buyer's own holds stay. Failures of these are only logged
//     (the claim expires by itself).
//
// It returns the result as Result does: when nothing was sold, Outcome is
// refund_pending and the caller cancels the payment at the PG
// (RecordRefunded once it did).
//
// A transaction that fails leaves its claim to expire by itself: the payment
// is DONE at the PG and a retry (the webhook, the reconciler) settles it,
// claiming again, and a failed commit may have committed.
func (s *Orders) ConfirmPayment(ctx context.Context, o *boxoffice.Order, p *boxoffice.Payment) (*boxoffice.Confirmation, error) {
	labels := o.Seats()
	var claimed, taken []string
	claim := o.Status.CanBecome(boxoffice.OrderConfirmed)
	if claim {
		var err error
		if claimed, taken, err = s.Holds.claimSeats(ctx, o.EventID, o.AccountID, o.ID, labels); err != nil {
			return nil, fmt.Errorf("confirm payment %s of order %s: %w", p.PaymentKey, o.ID, err)
		}
	}
	now := s.DB.Now()
	var inserted, sold bool
	var bought int
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		sold = false
		// Recorded as not confirmed until decided below, in this transaction.
		var tickets, limit int
		var status boxoffice.OrderStatus
		inserted, tickets, status, limit, err = lockForConfirmation(ctx, tx, o, p, now)
		if err != nil || !inserted {
			return err
		}
		var reason, detail string
		switch {
		case status == boxoffice.OrderConfirmed:
			reason = boxoffice.ReasonAlreadyPaid
		case !status.CanBecome(boxoffice.OrderConfirmed):
			var failureCode string // why it closed (the order row is locked): replaced by a newer order, say
			if err := tx.QueryRow(ctx, `SELECT failure_code FROM orders WHERE id = $1`, o.ID).Scan(&failureCode); err != nil {
				return fmt.Errorf("read order %s: %w", o.ID, err)
			}
			reason, detail = boxoffice.ClosedReason(failureCode), string(status)
		case tickets+len(labels) > limit:
			reason, detail = boxoffice.ReasonLimitExceeded, fmt.Sprintf("%d bought, %d more, limit %d", tickets, len(labels), limit)
		case !claim:
			// Unreachable: an order that could not be paid before the
			// transaction cannot be paid in it (orderMoves).
			return fmt.Errorf("order %s became payable from %s", o.ID, o.Status)
		case len(taken) > 0:
			reason, detail = boxoffice.ReasonSeatTaken, fmt.Sprintf("held by another account: %v", taken)
		}
		if reason == "" {
			var lost []string
			if lost, bought, err = sell(ctx, tx, o, p, now); err != nil {
				return err
			}
			if sold = len(lost) == 0; !sold {
				reason, detail = boxoffice.ReasonSeatTaken, fmt.Sprintf("sold to another order: %v", lost)
			}
		}
		if reason != "" {
			err = refundInTx(ctx, tx, o.ID, p.PaymentKey, status, reason, detail, now)
		}
		if err == nil && s.beforeCommit != nil {
			s.beforeCommit(o.ID, p.PaymentKey)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("confirm payment %s of order %s: %w", p.PaymentKey, o.ID, err)
	}
	if claim && !inserted {
		if sold, bought, err = s.soldBy(ctx, o, p.PaymentKey); err != nil {
			return nil, err
		}
	}
	if sold {
		if err := s.Holds.MarkSold(ctx, o.EventID, o.AccountID, labels, bought); err != nil {
			s.logger().Warn("mark sold seats in Redis (the claim keeps them until the sold-seat cache reloads them)", "order_id", o.ID, "err", err)
		}
	} else if len(claimed) > 0 {
		if err := s.Holds.releaseSeats(ctx, o.EventID, o.AccountID, claimed); err != nil {
			s.logger().Warn("release the seats claimed for a payment that sells nothing (the claim expires by itself)", "order_id", o.ID, "err", err)
		}
	}
	return s.Result(ctx, o.ID, p.PaymentKey)
}

// soldBy reports whether the payment, recorded by another call, sold the
// order's seats, and the account's tickets for the event now (for MarkSold).
func (s *Orders) soldBy(ctx context.Context, o *boxoffice.Order, paymentKey string) (bool, int, error) {
	var outcome boxoffice.PaymentOutcome
	var bought int
	err := s.DB.Pool.QueryRow(ctx, `
		SELECT p.outcome, coalesce(c.tickets, 0) FROM payment p
		LEFT JOIN purchase_count c ON c.event_id = $2 AND c.account_id = $3
		WHERE p.payment_key = $1`, paymentKey, o.EventID, o.AccountID).Scan(&outcome, &bought)
	if err != nil {
		return false, 0, fmt.Errorf("read payment %s: %w", paymentKey, err)
	}
	return outcome == boxoffice.PaymentConfirmed, bought, nil
}

// refundInTx decides, in the confirmation transaction, that a DONE payment
// sells nothing: the payment becomes refund_pending with the reason, and a
// payable order REFUNDED (an order that failed or was given up is refunded
// too, keeping its first reason; a confirmed order stays confirmed).
func refundInTx(ctx context.Context, tx pgx.Tx, orderID, paymentKey string, status boxoffice.OrderStatus, reason, detail string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE payment SET outcome = 'refund_pending', reason = $2, updated_at = $3 WHERE payment_key = $1`,
		paymentKey, reason, now)
	if err != nil {
		return fmt.Errorf("record refund: %w", err)
	}
	if !status.CanBecome(boxoffice.OrderRefunded) {
		return nil
	}
	_, err = tx.Exec(ctx, `
		UPDATE orders SET status = 'REFUNDED', updated_at = $4,
			failure_code = CASE WHEN status = ANY($5) THEN $2 ELSE failure_code END,
			failure_message = CASE WHEN status = ANY($5) THEN $3 ELSE failure_message END
		WHERE id = $1 AND status = ANY($6)`,
		orderID, reason, detail, now, boxoffice.OrderStatusesBefore(boxoffice.OrderConfirmed),
		boxoffice.OrderStatusesBefore(boxoffice.OrderRefunded))
	if err != nil {
		return fmt.Errorf("refund order: %w", err)
	}
	return nil
}

// sell completes a sale in the confirmation transaction, its statements in
// one batch (one round trip) after a savepoint: the sold_seat rows (UNIQUE
// per seat, in label order so that concurrent sales cannot deadlock), the
// order CONFIRMED, the account's tickets counted, the tickets issued (random
// UUIDs, made here so that the outbox row can name them in the same batch),
// the outbox row and the payment confirmed. If a seat was sold already, no
// ticket is inserted (each seat has one), the batch is rolled back to the
// savepoint and the labels sold to others are returned. Otherwise it returns the account's tickets for the event in all.
func sell(ctx context.Context, tx pgx.Tx, o *boxoffice.Order, p *boxoffice.Payment, now time.Time) ([]string, int, error) {
	labels := o.Seats()
	slices.Sort(labels) // byte order: COLLATE "C"
	ids := make([]pgtype.UUID, len(labels))
	ev := OrderConfirmedEvent{
		OrderID: o.ID, EventID: o.EventID, AccountID: o.AccountID, Amount: o.Amount.Amount, Currency: o.Amount.Currency,
		PaymentKey: p.PaymentKey, Seats: o.Seats(), ConfirmedAt: now.UTC(), Tickets: make([]TicketOfEvent, len(labels)),
	}
	for i, l := range labels {
		ids[i] = newTicketID()
		ev.Tickets[i] = TicketOfEvent{ID: ids[i].String(), Seat: l}
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, 0, fmt.Errorf("outbox payload: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(`SAVEPOINT sale`)
	b.Queue(`
		INSERT INTO sold_seat (event_id, seat_label, order_id, account_id, sold_at)
		SELECT $1, seat, $2, $3, $4 FROM unnest($5::text[]) WITH ORDINALITY AS s(seat, n) ORDER BY n
		ON CONFLICT DO NOTHING RETURNING seat_label`, o.EventID, o.ID, o.AccountID, now, labels)
	b.Queue(`
		UPDATE orders SET status = 'CONFIRMED', confirmed_at = $2, updated_at = $2, failure_code = '', failure_message = ''
		WHERE id = $1 AND status = ANY($3)`, o.ID, now, boxoffice.OrderStatusesBefore(boxoffice.OrderConfirmed))
	b.Queue(`UPDATE purchase_count SET tickets = tickets + $3 WHERE event_id = $1 AND account_id = $2 RETURNING tickets`,
		o.EventID, o.AccountID, len(labels))
	b.Queue(`
		INSERT INTO ticket (id, order_id, event_id, seat_label, created_at)
		SELECT id, $1, $2, seat, $3 FROM unnest($4::uuid[], $5::text[]) AS t(id, seat)
		WHERE (SELECT count(*) FROM sold_seat WHERE event_id = $2 AND seat_label = ANY($5) AND order_id = $1) = cardinality($5::text[])`,
		o.ID, o.EventID, now, ids, labels)
	b.Queue(`INSERT INTO outbox (topic, payload, created_at) VALUES ($1, $2, $3)`, OutboxTopicOrderConfirmed, payload, now)
	b.Queue(`UPDATE payment SET outcome = 'confirmed', updated_at = $2 WHERE payment_key = $1`, p.PaymentKey, now)

	var soldNow []string
	var bought int
	err = func() error {
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("insert sold seats: %w", err)
		}
		if soldNow, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return fmt.Errorf("insert sold seats: %w", err)
		}
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("confirm order: %w", err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("confirm order: the locked order is not payable")
		}
		if err := br.QueryRow().Scan(&bought); err != nil {
			return fmt.Errorf("count tickets: %w", err)
		}
		for _, what := range []string{"issue tickets", "write outbox", "record confirmation"} {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		return br.Close()
	}()
	if err != nil {
		return nil, 0, err
	}
	if len(soldNow) == len(labels) {
		return nil, bought, nil
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT sale`); err != nil {
		return nil, 0, fmt.Errorf("roll back the sale: %w", err)
	}
	var lost []string
	for _, l := range o.Seats() {
		if !slices.Contains(soldNow, l) {
			lost = append(lost, l)
		}
	}
	return lost, 0, nil
}

// newTicketID returns a random (version 4, RFC 9562) UUID.
func newTicketID() pgtype.UUID {
	var u pgtype.UUID
	rand.Read(u.Bytes[:])
	u.Bytes[6] = u.Bytes[6]&0x0f | 0x40
	u.Bytes[8] = u.Bytes[8]&0x3f | 0x80
	u.Valid = true
	return u
}

// RecordRefunded records a refund_pending payment refunded, once the PG
// cancelled it; any other record stays as it is.
func (s *Orders) RecordRefunded(ctx context.Context, paymentKey string) error {
	_, err := s.DB.Pool.Exec(ctx, `UPDATE payment SET outcome = 'refunded', status = $2, updated_at = $3
		WHERE payment_key = $1 AND outcome = 'refund_pending'`, paymentKey, boxoffice.PaymentStatusCanceled, s.DB.Now())
	if err != nil {
		return fmt.Errorf("record refund of %s: %w", paymentKey, err)
	}
	return nil
}

// Result reads the order and the payment's recorded outcome and reason, as
// every caller for that payment sees them (Outcome "" when the payment is not
// recorded for the order). Errors: ENOTFOUND for an unknown order.
func (s *Orders) Result(ctx context.Context, orderID, paymentKey string) (*boxoffice.Confirmation, error) {
	o, err := s.FindOrderByID(ctx, orderID)
	if err != nil {
		return nil, err
	}
	c := &boxoffice.Confirmation{Order: o, PaymentKey: paymentKey}
	err = s.DB.Pool.QueryRow(ctx, `SELECT outcome, reason FROM payment WHERE payment_key = $1 AND order_id = $2`,
		paymentKey, orderID).Scan(&c.Outcome, &c.Reason)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read payment %s: %w", paymentKey, err)
	}
	return c, nil
}
