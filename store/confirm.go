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
// confirmed), and returns it with no payment (Outcome ""); the holds of its
// seats are then the buyer's to release again (endOrder). The caller has
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
	s.endOrder(ctx, o)
	return &boxoffice.Confirmation{Order: o}, nil
}

// endOrder lets the buyer release the holds of the order's seats again once
// the order can no longer be paid (Holds.endOrder), after the commit that
// says so; a failure is only logged, since the holds' order then ends with
// the holds themselves.
func (s *Orders) endOrder(ctx context.Context, o *boxoffice.Order) {
	if o.Status.CanBecome(boxoffice.OrderConfirmed) {
		return
	}
	if err := s.Holds.endOrder(context.WithoutCancel(ctx), o.EventID, o.AccountID, o.ID, o.Seats()); err != nil {
		s.logger().Warn("end the order of its seats' holds (they stay the order's until they expire)", "order_id", o.ID, "err", err)
	}
}

// PaymentRecord is a payment as recorded: its order, outcome and reason.
type PaymentRecord struct {
	OrderID string
	Outcome boxoffice.PaymentOutcome
	Reason  string
}

// OrderAndPayment returns the order as FindOrderByID does and the record
// of the payment (nil when it has none, whichever order it names), read in
// one round trip (one batch). The order and the payment are read by one
// statement, so from one snapshot: an outcome comes with the order as the
// transaction that recorded it left it, never an older one (the items and
// tickets follow in a second statement; a confirmation's tickets were
// committed with its outcome). Errors: ENOTFOUND for an unknown order.
func (s *Orders) OrderAndPayment(ctx context.Context, orderID, paymentKey string) (*boxoffice.Order, *PaymentRecord, error) {
	b := &pgx.Batch{}
	queueOrderAndPayment(b, orderID, paymentKey)
	var o *boxoffice.Order
	var rec *PaymentRecord
	err := sendBatch(ctx, s.DB.Pool, b, func(br pgx.BatchResults) error {
		var err error
		o, rec, err = s.readOrderAndPayment(br)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return o, rec, nil
}

// queueOrderAndPayment queues the reads of OrderAndPayment, which
// readOrderAndPayment reads.
func queueOrderAndPayment(b *pgx.Batch, orderID, paymentKey string) {
	b.Queue(`SELECT `+orderColumns+`, p.order_id, p.outcome, p.reason
		FROM orders o JOIN event e ON e.id = o.event_id
		LEFT JOIN payment p ON p.payment_key = $2
		WHERE o.id = $1`, orderID, paymentKey)
	queueDetails(b, []string{orderID})
}

// readOrderAndPayment reads queueOrderAndPayment's results.
func (s *Orders) readOrderAndPayment(br pgx.BatchResults) (*boxoffice.Order, *PaymentRecord, error) {
	var payOrder, outcome, reason *string
	o, err := scanOrder(br.QueryRow(), &payOrder, &outcome, &reason)
	if err != nil {
		return nil, nil, fmt.Errorf("find order: %w", notFound(err, "err_no_order"))
	}
	var rec *PaymentRecord
	if payOrder != nil {
		rec = &PaymentRecord{OrderID: *payOrder, Outcome: boxoffice.PaymentOutcome(*outcome), Reason: *reason}
	}
	if err := s.readDetails(br, []*boxoffice.Order{o}); err != nil {
		return nil, nil, err
	}
	return o, rec, nil
}

// Confirmation returns the result of the payment for the order as Result
// does: Outcome and Reason from rec when it records the payment for o.
func Confirmation(o *boxoffice.Order, paymentKey string, rec *PaymentRecord) *boxoffice.Confirmation {
	c := &boxoffice.Confirmation{Order: o, PaymentKey: paymentKey}
	if rec != nil && rec.OrderID == o.ID {
		c.Outcome, c.Reason = rec.Outcome, rec.Reason
	}
	return c
}

// paymentLockSQL takes the transaction-level advisory lock of the payment
// key $1: every transaction that records a payment takes it first
// (insertPayment, lockForConfirmation), so that one recording a payment
// waits for any other recording the same payment to end, and then sees
// what it recorded. Its key is in the two-int4 space of advisory locks
// (class paymentLockClass, the key's hashtext), apart from the bigint keys
// of the outbox relay, the sandbox and goose; two payment keys with the
// same hash only wait for each other. payment_key UNIQUE stays the final
// guard: an INSERT of a payment recorded meanwhile fails.
const paymentLockSQL = `SELECT pg_advisory_xact_lock(1, hashtext($1))`

// insertPaymentSQL is the INSERT of a payment (key, order, amount, status,
// outcome, reason, approval time, now), made under paymentLockSQL.
const insertPaymentSQL = `
	INSERT INTO payment (payment_key, order_id, amount, status, outcome, reason, approved_at, created_at, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`

// queueInsertPayment queues insertPaymentSQL for the PG's payment p of the
// order with an outcome and reason at now, followed by onConflict (an ON
// CONFLICT clause, or "" for an INSERT that fails on a recorded payment).
func queueInsertPayment(b *pgx.Batch, orderID string, p *boxoffice.Payment, outcome boxoffice.PaymentOutcome, reason string, now time.Time, onConflict string) {
	b.Queue(insertPaymentSQL+onConflict, p.PaymentKey, orderID, p.TotalAmount, p.Status, outcome, reason, p.ApprovedAt, now)
}

// insertPayment records the PG's payment for the order with an outcome, and
// reports false (changing nothing) when it is recorded already, in one
// round trip: it takes the payment's lock (paymentLockSQL), so that it
// waits for a transaction recording the same payment to end.
func insertPayment(ctx context.Context, tx pgx.Tx, orderID string, p *boxoffice.Payment, outcome boxoffice.PaymentOutcome, reason string, now time.Time) (bool, error) {
	b := &pgx.Batch{}
	b.Queue(paymentLockSQL, p.PaymentKey)
	queueInsertPayment(b, orderID, p, outcome, reason, now, ` ON CONFLICT (payment_key) DO NOTHING`)
	var inserted bool
	err := sendBatch(ctx, tx, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		tag, err := br.Exec()
		inserted = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record payment %s: %w", p.PaymentKey, err)
	}
	return inserted, nil
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

// refundRejectedSQL turns a record of the DONE payment $1 as rejected into
// refund_pending, status $2 at $3 (see insertDonePayment); any other record
// stays.
const refundRejectedSQL = `UPDATE payment SET outcome = 'refund_pending', status = $2, updated_at = $3
	WHERE payment_key = $1 AND outcome = 'rejected'`

// refundRejected runs refundRejectedSQL for the payment.
func refundRejected(ctx context.Context, tx pgx.Tx, p *boxoffice.Payment, now time.Time) error {
	if _, err := tx.Exec(ctx, refundRejectedSQL, p.PaymentKey, p.Status, now); err != nil {
		return fmt.Errorf("refund a rejected payment the PG confirmed: %w", err)
	}
	return nil
}

// locked is what the confirmation transaction read under its locks.
type locked struct {
	recorded    *boxoffice.PaymentOutcome // the payment's record by an earlier transaction (nil: none)
	tickets     int                       // the account's bought tickets for the event
	status      boxoffice.OrderStatus
	failureCode string // why the order closed, if it did
	limit       int    // the event's tickets per account
}

// lockForConfirmation starts the confirmation transaction on c, its
// statements in one batch with BEGIN (one round trip): it takes the
// payment's lock (paymentLockSQL: a repeat waits for the first to end),
// then the account's purchase_count row (purchaseLockSQL), both in one
// statement, then the order row, so that one account's confirmations run
// one at a time, and reads what the decision needs, the payment's record and
// the account's bought tickets among it. The payment is recorded once, with
// its decided outcome, when the transaction ends (sell, queueRefund), so
// that its row and indexes are written once. The record and the tickets are
// read by a statement after the locks', whose snapshot has every
// transaction that held them before.
func lockForConfirmation(ctx context.Context, c *pgx.Conn, o *boxoffice.Order, p *boxoffice.Payment) (locked, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	// purchaseLockSQL, whose row to insert comes from the subquery that
	// takes paymentLockSQL's lock first (a subquery with a volatile function
	// is neither flattened nor dropped).
	b.Queue(`
		INSERT INTO purchase_count (event_id, account_id)
		SELECT e.id, $2 FROM (SELECT pg_advisory_xact_lock(1, hashtext($3))) l, event e WHERE e.id = $1
		ON CONFLICT (event_id, account_id) DO UPDATE SET tickets = purchase_count.tickets WHERE false`,
		o.EventID, o.AccountID, p.PaymentKey)
	// NO KEY UPDATE: the payment rows of other transactions hold KEY SHARE
	// locks on the order (their foreign key), which FOR UPDATE would wait
	// for while they wait for purchase_count: a deadlock.
	b.Queue(`
		SELECT o.status, o.failure_code, e.max_per_account, (SELECT outcome FROM payment WHERE payment_key = $2),
		       (SELECT tickets FROM purchase_count WHERE event_id = o.event_id AND account_id = o.account_id)
		FROM orders o JOIN event e ON e.id = o.event_id
		WHERE o.id = $1 FOR NO KEY UPDATE OF o`, o.ID, p.PaymentKey)
	var l locked
	err := sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("lock payment %s and purchase count: %w", p.PaymentKey, err)
		}
		if err := br.QueryRow().Scan(&l.status, &l.failureCode, &l.limit, &l.recorded, &l.tickets); err != nil {
			return fmt.Errorf("lock order: %w", err)
		}
		return nil
	})
	return l, err
}

// RecordUnconfirmed records a payment that sells nothing and needs no
// refund (rejected: never confirmed; refunded: cancelled at the PG by
// others). failOrder moves the order to FAILED with the reason; a payment
// that failed at the PG (payment_failed) leaves a payable order payable and
// notes why on it. A payment recorded already keeps its record. An order
// failed here lets the buyer release its seats' holds again (endOrder). It
// returns the result as Result does.
func (s *Orders) RecordUnconfirmed(ctx context.Context, o *boxoffice.Order, p *boxoffice.Payment, outcome boxoffice.PaymentOutcome, reason, detail string, failOrder bool) (*boxoffice.Confirmation, error) {
	now := s.DB.Now()
	var inserted bool
	err := s.DB.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if inserted, err = insertPayment(ctx, tx, o.ID, p, outcome, reason, now); err != nil || !inserted {
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
	return s.endedResult(ctx, o.ID, p.PaymentKey, inserted && failOrder)
}

// endedResult returns the result as Result does, after ending the order of
// its seats' holds (endOrder) if ended says that the caller's commit may
// have closed a payable order.
func (s *Orders) endedResult(ctx context.Context, orderID, paymentKey string, ended bool) (*boxoffice.Confirmation, error) {
	res, err := s.Result(ctx, orderID, paymentKey)
	if err != nil {
		return nil, err
	}
	if ended {
		s.endOrder(ctx, res.Order)
	}
	return res, nil
}

// RecordUnsold records a DONE payment that sells nothing as refund_pending
// (failing a payable order, which cannot be paid by it, whose seats' holds
// are then the buyer's to release again: endOrder) and returns the result
// as Result does; the caller then cancels the payment at the PG
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
	return s.endedResult(ctx, o.ID, p.PaymentKey, inserted)
}

// ConfirmPayment settles a payment the PG reports DONE for exactly the
// order's amount (minor units of its currency), in three steps, so that no
// row lock is held across a call to Redis:
//
//  1. Before the transaction, the claim: if the order may still be paid (as
//     just read; an order that may not never may again), the seats are
//     claimed for the buyer in Redis (Holds.claimSeats, one Lua script, all
//     or nothing): none may be held by another account (the order's holds
//     may have expired, been released or lost), blocked, or marked sold in
//     Redis's sold-seat cache already, and from the claim on no
//     other account can hold them, until the sale is surely in Redis's
//     sold-seat cache. The transaction commits well within
//     claimCommitMargin of the claim, as the claim's length assumes.
//  2. The transaction, PostgreSQL only, in two round trips, each one pgx
//     batch on one connection (DB.inBatchTx): BEGIN and the locks
//     (lockForConfirmation), then the sale or the refund with COMMIT (and,
//     for a refund, the result's reads) (sell, refund):
//     - take the payment's lock (paymentLockSQL: a repeat waits for the
//     first and then returns its result; a record of it as rejected, made
//     while this confirm was under way at the PG, turns into a refund);
//     - lock the account's purchase_count row, then the order row, so that
//     one account's confirmations run one at a time;
//     - decide: the order must still be payable (not paid by another
//     payment, failed or given up), the account's bought tickets plus
//     these must stay within the event's limit, and the claim must have
//     found no seat held by another account;
//     - insert the sold_seat rows (its key is UNIQUE per seat; in label
//     order so that concurrent sales cannot deadlock); a seat sold
//     meanwhile fails the insert, which skips the rest of the batch, and
//     the transaction goes back to a savepoint and refunds;
//     - sold: move the order to CONFIRMED (a conditional UPDATE that fails
//     the batch if the order is not payable), count the tickets in
//     purchase_count, issue them (random UUIDs), write the outbox row,
//     record the payment confirmed, commit; not sold: record the payment
//     refund_pending and move a payable order to REFUNDED with the reason,
//     commit. The payment's row is written once, with its outcome.
//  3. After the commit, in Redis: a sale is marked (Holds.MarkSold ends
//     every hold on the seats, the claim included; if it fails, the claim
//     keeps the seats from other accounts until the sold-seat cache's next
//     load has them). A repeat that found the payment recorded by another
//     call marks the sale again if it was one (MarkSold changes nothing the
//     second time; the first may have failed, and then its claim may have
//     held seats that sold:{e} does not have yet: a claim never holds a
//     seat that sold:{e} has). When nothing was
//     sold, the holds that the claim took (seats no hold of the buyer
//     covered) end at once, so that seats sold to nobody are free again,
//     while the buyer's own holds stay, and are the buyer's to release
//     again once the order was refunded (endOrder). Failures of these are
//     only logged (the claim expires by itself).
//
// It returns the result as Result does: a sale's made from what its commit
// wrote (soldResult), anything else read after the commit in the same round
// trip. When nothing was sold, Outcome is refund_pending and the caller
// cancels the payment at the PG (RecordRefunded once it did).
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
	var res *boxoffice.Confirmation
	err := s.DB.inBatchTx(ctx, func(c *pgx.Conn) error {
		l, err := lockForConfirmation(ctx, c, o, p)
		if err != nil {
			return err
		}
		if inserted = l.recorded == nil; !inserted {
			// Recorded by another call, which decided: a record of it as
			// rejected becomes refund_pending (insertDonePayment).
			b := &pgx.Batch{}
			if *l.recorded == boxoffice.PaymentRejected {
				b.Queue(refundRejectedSQL, p.PaymentKey, p.Status, now)
			}
			b.Queue(`COMMIT`)
			return sendBatch(ctx, c, b, func(pgx.BatchResults) error { return nil })
		}
		var reason, detail string
		switch {
		case l.status == boxoffice.OrderConfirmed:
			reason = boxoffice.ReasonAlreadyPaid
		case !l.status.CanBecome(boxoffice.OrderConfirmed):
			// why it closed: replaced by a newer order, say
			reason, detail = boxoffice.ClosedReason(l.failureCode), string(l.status)
		case l.tickets+len(labels) > l.limit:
			reason, detail = boxoffice.ReasonLimitExceeded, fmt.Sprintf("%d bought, %d more, limit %d", l.tickets, len(labels), l.limit)
		case !claim:
			// Unreachable: an order that could not be paid before the
			// transaction cannot be paid in it (orderMoves).
			return fmt.Errorf("order %s became payable from %s", o.ID, o.Status)
		case len(taken) > 0:
			reason, detail = boxoffice.ReasonSeatTaken, fmt.Sprintf("held by another account, blocked or sold: %v", taken)
		}
		if s.beforeCommit != nil {
			s.beforeCommit(o.ID, p.PaymentKey)
		}
		b := &pgx.Batch{}
		if reason == "" {
			var lost []string
			if lost, bought, res, err = s.sell(ctx, c, o, p, now); err != nil || lost == nil {
				sold = err == nil
				return err
			}
			reason, detail = boxoffice.ReasonSeatTaken, fmt.Sprintf("sold to another order: %v", lost)
		}
		queueRefund(b, o.ID, p, l.status, reason, detail, now)
		b.Queue(`COMMIT`)
		writes := b.Len()
		queueOrderAndPayment(b, o.ID, p.PaymentKey)
		return sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
			for range writes {
				if _, err := br.Exec(); err != nil {
					return fmt.Errorf("record refund: %w", err)
				}
			}
			o, rec, err := s.readOrderAndPayment(br)
			if err == nil {
				res = Confirmation(o, p.PaymentKey, rec)
			}
			return err
		})
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
	ended := claim && inserted && !sold
	if res == nil {
		return s.endedResult(ctx, o.ID, p.PaymentKey, ended)
	}
	if ended {
		s.endOrder(ctx, res.Order)
	}
	return res, nil
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

// queueRefund queues, in the confirmation transaction, the decision that a
// DONE payment sells nothing: the payment is recorded refund_pending with
// the reason, and a payable order becomes REFUNDED (an order that failed or
// was given up is refunded too, keeping its first reason; a confirmed order
// stays confirmed). It queues one statement, or two when the order can
// become REFUNDED.
func queueRefund(b *pgx.Batch, orderID string, p *boxoffice.Payment, status boxoffice.OrderStatus, reason, detail string, now time.Time) {
	queueInsertPayment(b, orderID, p, boxoffice.PaymentRefundPending, reason, now, "")
	if !status.CanBecome(boxoffice.OrderRefunded) {
		return
	}
	b.Queue(`
		UPDATE orders SET status = 'REFUNDED', updated_at = $4,
			failure_code = CASE WHEN status = ANY($5) THEN $2 ELSE failure_code END,
			failure_message = CASE WHEN status = ANY($5) THEN $3 ELSE failure_message END
		WHERE id = $1 AND status = ANY($6)`,
		orderID, reason, detail, now, boxoffice.OrderStatusesBefore(boxoffice.OrderConfirmed),
		boxoffice.OrderStatusesBefore(boxoffice.OrderRefunded))
}

// sell completes a sale in the confirmation transaction on c, in one batch
// after a savepoint: one statement writes the sold_seat rows (its key is
// UNIQUE per seat; in label order so that concurrent sales cannot
// deadlock), the order CONFIRMED, the account's tickets counted, the
// tickets issued (random UUIDs, made here so that the outbox row can name
// them in the same statement), the outbox row and the payment recorded
// confirmed; then COMMIT. One statement instead of six costs PostgreSQL
// five statements' own work a paid order (docs/performance.md,
// "PostgreSQL's work per paid order, again"). It returns the account's
// tickets for the event in all and the result (soldResult: what the commit
// wrote, not read again). If a seat was sold already, the statement fails,
// which skips the COMMIT: the transaction goes back to the savepoint, still
// open, and the labels sold to others are returned (never nil then).
func (s *Orders) sell(ctx context.Context, c *pgx.Conn, o *boxoffice.Order, p *boxoffice.Payment, now time.Time) ([]string, int, *boxoffice.Confirmation, error) {
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
		return nil, 0, nil, fmt.Errorf("outbox payload: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(`SAVEPOINT sale`)
	// One statement: its data-modifying parts run once each, whether read
	// or not, and the foreign keys are checked at its end. 1 / 0 fails it
	// (and so the batch, COMMIT included) should the locked order not be
	// payable after all.
	b.Queue(`
		WITH sold AS (
			INSERT INTO sold_seat (event_id, seat_label, order_id, account_id, sold_at)
			SELECT $1, seat, $2, $3, $4 FROM unnest($5::text[]) WITH ORDINALITY AS s(seat, n) ORDER BY n
		), confirmed AS (
			UPDATE orders SET status = 'CONFIRMED', confirmed_at = $4, updated_at = $4, failure_code = '', failure_message = ''
			WHERE id = $2 AND status = ANY($6) RETURNING 1
		), counted AS (
			UPDATE purchase_count SET tickets = tickets + cardinality($5::text[]) WHERE event_id = $1 AND account_id = $3 RETURNING tickets
		), issued AS (
			INSERT INTO ticket (id, order_id, event_id, seat_label, created_at)
			SELECT id, $2, $1, seat, $4 FROM unnest($7::uuid[], $5::text[]) AS t(id, seat)
		), published AS (
			INSERT INTO outbox (topic, payload, created_at) VALUES ($8, $9, $4)
		), paid AS (
			INSERT INTO payment (payment_key, order_id, amount, status, outcome, reason, approved_at, created_at, updated_at)
			VALUES ($10, $2, $11, $12, 'confirmed', '', $13, $4, $4)
		)
		SELECT 1 / (SELECT count(*) FROM confirmed)::int, (SELECT tickets FROM counted)`,
		o.EventID, o.ID, o.AccountID, now, labels, boxoffice.OrderStatusesBefore(boxoffice.OrderConfirmed), ids,
		OutboxTopicOrderConfirmed, payload, p.PaymentKey, p.TotalAmount, p.Status, p.ApprovedAt)
	b.Queue(`COMMIT`)

	var bought int
	err = sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		var one int
		if err := br.QueryRow().Scan(&one, &bought); err != nil {
			return fmt.Errorf("sell: %w", err)
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
	if err == nil {
		return nil, bought, s.soldResult(o, p.PaymentKey, labels, ids, now), nil
	}
	// A seat sold to another order fails the statement on sold_seat's key
	// or on its live ticket's (ticket_live_seat), whichever of the
	// statement's inserts PostgreSQL runs first.
	if c := pgConstraint(err); pgErrCode(err) != "23505" /* unique_violation */ || c != "sold_seat_pkey" && c != "ticket_live_seat" {
		return nil, 0, nil, err
	}
	// Alone: a batch's statements not yet prepared on the connection would
	// be prepared first, which the aborted transaction refuses.
	if _, err := c.Exec(ctx, `ROLLBACK TO SAVEPOINT sale`); err != nil {
		return nil, 0, nil, fmt.Errorf("roll back the sale: %w", err)
	}
	rows, err := c.Query(ctx, `SELECT seat_label FROM sold_seat WHERE event_id = $1 AND seat_label = ANY($2) ORDER BY seat_label`, o.EventID, labels)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("seats sold to others: %w", err)
	}
	lost, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err == nil && len(lost) == 0 {
		err = errors.New("a seat was sold and is not") // its sale rolled back: a retry settles the payment
	}
	return lost, 0, nil, err
}

// soldResult returns the result of the payment that sold o, as Result
// would read it right after sell's commit, made from what the commit wrote
// under the order's lock: o CONFIRMED at now with no failure and charged,
// its items as read, a ticket ids[i] for each seat labels[i] (as sell
// issued them) in its item's order, and the payment confirmed with no
// reason.
func (s *Orders) soldResult(o *boxoffice.Order, paymentKey string, labels []string, ids []pgtype.UUID, now time.Time) *boxoffice.Confirmation {
	sold := *o
	at := now.Truncate(time.Microsecond).UTC() // as PostgreSQL stores it
	sold.Status, sold.FailureCode, sold.FailureMessage = boxoffice.OrderConfirmed, "", ""
	sold.Charged = true // the payment that sold it is confirmed
	sold.UpdatedAt, sold.ConfirmedAt = at, &at
	sold.Tickets = make([]boxoffice.Ticket, len(labels))
	for i, l := range labels {
		t := boxoffice.Ticket{ID: ids[i].String(), EventID: o.EventID, Seat: l}
		t.Code = boxoffice.TicketCode(s.TicketSecret, t)
		sold.Tickets[i] = t
	}
	sortTickets(&sold)
	return &boxoffice.Confirmation{Order: &sold, PaymentKey: paymentKey, Outcome: boxoffice.PaymentConfirmed}
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
// recorded for the order), in one round trip. Errors: ENOTFOUND for an
// unknown order.
func (s *Orders) Result(ctx context.Context, orderID, paymentKey string) (*boxoffice.Confirmation, error) {
	o, rec, err := s.OrderAndPayment(ctx, orderID, paymentKey)
	if err != nil {
		return nil, err
	}
	return Confirmation(o, paymentKey, rec), nil
}
