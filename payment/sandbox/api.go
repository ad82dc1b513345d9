package sandbox

import (
	"github.com/boxoffice/boxoffice"
	"slices"

	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// apiAnswer is one answer of the sandbox's API: a status and a JSON body.
type apiAnswer struct {
	status int
	body   []byte
}

// apiOp performs one API call inside the transaction the api wrapper opened,
// returning the answer and the webhook deliveries it wrote (to start after
// commit). An error is a failure of the sandbox itself (500).
type apiOp func(ctx context.Context, tx pgx.Tx, r *http.Request, body []byte) (apiAnswer, []webhook, error)

func paymentAnswer(p *boxoffice.Payment) apiAnswer {
	b, _ := json.Marshal(p) // a boxoffice.Payment always encodes
	return apiAnswer{status: http.StatusOK, body: b}
}

// errorAnswer is Toss's error body {"code", "message"}
// (docs.tosspayments.com/reference/error-codes).
func errorAnswer(status int, code, message string) apiAnswer {
	b, _ := json.Marshal(map[string]string{"code": code, "message": message})
	return apiAnswer{status: status, body: b}
}

func writeAnswer(w http.ResponseWriter, a apiAnswer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	w.Write(a.body)
}

// Answers the sandbox gives in several places, with Toss's codes and English messages.
var (
	answerUnauthorized = errorAnswer(http.StatusUnauthorized, boxoffice.PGUnauthorizedKey, "Unauthorized secret key or client key.")
	answerNotFound     = errorAnswer(http.StatusNotFound, boxoffice.PGNotFoundPayment, "Payment not found.")
)

func answerInvalid(message string) apiAnswer {
	return errorAnswer(http.StatusBadRequest, boxoffice.PGInvalidRequest, message)
}

// maxIdempotencyKey is Toss's limit on an Idempotency-Key
// (docs.tosspayments.com/guides/v2/learn/idempotency-key).
const maxIdempotencyKey = 300

// api wraps an API operation with what every call of Toss's API shares:
// Basic authentication with the secret key and a colon, answered 401
// UNAUTHORIZED_KEY otherwise (docs.tosspayments.com/reference/using-api/authorization);
// a bounded body; one transaction; and, for POST, the Idempotency-Key: the
// first answer for a key, method and path is stored in the transaction that
// produced it and replayed for every repeat. A repeat that arrives while the
// first is running waits for it (the key's row is locked until its commit).
func (s *Sandbox) api(op apiOp) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, password, ok := r.BasicAuth()
		if !ok || password != "" || subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.SecretKey)) != 1 {
			writeAnswer(w, answerUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		if err != nil {
			writeAnswer(w, answerInvalid("The request body could not be read."))
			return
		}
		idemKey := ""
		if r.Method == http.MethodPost {
			idemKey = r.Header.Get("Idempotency-Key")
		}
		if len(idemKey) > maxIdempotencyKey {
			writeAnswer(w, answerInvalid("The Idempotency-Key is longer than 300 characters."))
			return
		}
		ctx := r.Context()
		var ans apiAnswer
		var deliveries []webhook
		err = pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
			if idemKey != "" {
				tag, err := tx.Exec(ctx, `INSERT INTO sandbox_pg.sandbox_pg_idempotency (idempotency_key, method, path)
					VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, idemKey, r.Method, r.URL.Path)
				if err != nil {
					return fmt.Errorf("claim idempotency key: %w", err)
				}
				if tag.RowsAffected() == 0 {
					err := tx.QueryRow(ctx, `SELECT status, body FROM sandbox_pg.sandbox_pg_idempotency
						WHERE idempotency_key = $1 AND method = $2 AND path = $3`, idemKey, r.Method, r.URL.Path).
						Scan(&ans.status, &ans.body)
					if err != nil {
						return fmt.Errorf("replay idempotency key: %w", err)
					}
					return nil
				}
			}
			var err error
			ans, deliveries, err = op(ctx, tx, r, body)
			if err != nil || idemKey == "" {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE sandbox_pg.sandbox_pg_idempotency SET status = $4, body = $5
				WHERE idempotency_key = $1 AND method = $2 AND path = $3`, idemKey, r.Method, r.URL.Path, ans.status, ans.body)
			if err != nil {
				return fmt.Errorf("store idempotent answer: %w", err)
			}
			return nil
		})
		if err != nil {
			s.cfg.Logger.Error("sandbox PG: API call", "method", r.Method, "path", r.URL.Path, "err", err)
			writeAnswer(w, errorAnswer(http.StatusInternalServerError, "FAILED_INTERNAL_SYSTEM_PROCESSING",
				"An internal error occurred. Please try again."))
			return
		}
		for _, hook := range deliveries {
			s.spawn(hook)
		}
		writeAnswer(w, ans)
	}
}

// paymentColumns are the columns scanPayment reads, in its order.
const paymentColumns = `payment_key, order_id, order_name, status, total_amount, balance_amount,
	requested_at, approved_at, cancels, failure_code, failure_message, scenario`

// scanPayment reads a sandbox_pg_payment row (paymentColumns) as Toss's
// boxoffice.Payment object, and the payment's scenario.
func scanPayment(row pgx.Row) (*boxoffice.Payment, string, error) {
	var p boxoffice.Payment
	var approvedAt *time.Time
	var failureCode, failureMessage, scenario string
	err := row.Scan(&p.PaymentKey, &p.OrderID, &p.OrderName, &p.Status, &p.TotalAmount, &p.BalanceAmount,
		&p.RequestedAt, &approvedAt, &p.Cancels, &failureCode, &failureMessage, &scenario)
	if err != nil {
		return nil, "", err
	}
	p.Method, p.Currency = "카드", "KRW"
	p.RequestedAt = p.RequestedAt.In(kst)
	if approvedAt != nil {
		t := approvedAt.In(kst)
		p.ApprovedAt = &t
	}
	if len(p.Cancels) == 0 {
		p.Cancels = nil // Toss sends null, not []
	}
	for i := range p.Cancels {
		p.Cancels[i].CanceledAt = p.Cancels[i].CanceledAt.In(kst)
	}
	if failureCode != "" {
		p.Failure = &boxoffice.PaymentFailure{Code: failureCode, Message: failureMessage}
	}
	return &p, scenario, nil
}

// rejectCardMessage is Toss's message for INVALID_REJECT_CARD.
const rejectCardMessage = "Refer to card issuer/decline."

// confirmAPI handles POST /v1/payments/confirm {"paymentKey", "orderId",
// "amount"} (docs.tosspayments.com/reference#결제-승인).
func (s *Sandbox) confirmAPI(ctx context.Context, tx pgx.Tx, _ *http.Request, body []byte) (apiAnswer, []webhook, error) {
	var in struct {
		PaymentKey string `json:"paymentKey"`
		OrderID    string `json:"orderId"`
		Amount     int64  `json:"amount"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.PaymentKey == "" || in.OrderID == "" || in.Amount <= 0 {
		return answerInvalid("paymentKey, orderId and a positive amount are required."), nil, nil
	}
	return s.confirm(ctx, tx, in.PaymentKey, in.OrderID, in.Amount)
}

// confirm moves an authenticated (IN_PROGRESS) payment to DONE, or to ABORTED
// with 400 INVALID_REJECT_CARD under ScenarioRejectCard, in one conditional
// UPDATE, so that of any number of concurrent confirms exactly one changes
// the payment. The others answer: 404 NOT_FOUND_PAYMENT for an unknown key,
// 400 INVALID_REQUEST when orderId or amount differ from the payment's, 400
// ALREADY_PROCESSED_PAYMENT when it left IN_PROGRESS before.
func (s *Sandbox) confirm(ctx context.Context, tx pgx.Tx, paymentKey, orderID string, amount int64) (apiAnswer, []webhook, error) {
	p, scenario, err := scanPayment(tx.QueryRow(ctx, `UPDATE sandbox_pg.sandbox_pg_payment SET
			status = CASE WHEN scenario = $4 THEN 'ABORTED' ELSE 'DONE' END,
			approved_at = CASE WHEN scenario = $4 THEN NULL ELSE $5::timestamptz END,
			failure_code = CASE WHEN scenario = $4 THEN $6::text ELSE '' END,
			failure_message = CASE WHEN scenario = $4 THEN $7::text ELSE '' END,
			last_transaction_key = $8
		WHERE payment_key = $1 AND order_id = $2 AND total_amount = $3 AND status = 'IN_PROGRESS'
		RETURNING `+paymentColumns,
		paymentKey, orderID, amount, ScenarioRejectCard, s.now(), boxoffice.PGInvalidRejectCard, rejectCardMessage, rand.Text()))
	if errors.Is(err, pgx.ErrNoRows) {
		return s.confirmRefused(ctx, tx, paymentKey, orderID, amount)
	} else if err != nil {
		return apiAnswer{}, nil, fmt.Errorf("confirm payment: %w", err)
	}
	deliveries, err := s.enqueueWebhooks(ctx, tx, p, scenario)
	if err != nil {
		return apiAnswer{}, nil, err
	}
	if p.Status == boxoffice.PaymentStatusAborted {
		return errorAnswer(http.StatusBadRequest, boxoffice.PGInvalidRejectCard, rejectCardMessage), deliveries, nil
	}
	return paymentAnswer(p), deliveries, nil
}

// confirmRefused says why confirm changed nothing. Payments only move
// forward, so what it reads still explains the UPDATE's miss.
func (s *Sandbox) confirmRefused(ctx context.Context, tx pgx.Tx, paymentKey, orderID string, amount int64) (apiAnswer, []webhook, error) {
	var gotOrderID string
	var gotAmount int64
	err := tx.QueryRow(ctx, `SELECT order_id, total_amount FROM sandbox_pg.sandbox_pg_payment WHERE payment_key = $1`, paymentKey).
		Scan(&gotOrderID, &gotAmount)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return answerNotFound, nil, nil
	case err != nil:
		return apiAnswer{}, nil, fmt.Errorf("look up payment: %w", err)
	case gotOrderID != orderID || gotAmount != amount:
		return answerInvalid("orderId or amount does not match the payment."), nil, nil
	}
	return errorAnswer(http.StatusBadRequest, boxoffice.PGAlreadyProcessedPayment, "This is a payment that has already been processed."), nil, nil
}

// getPaymentAPI handles GET /v1/payments/{paymentKey}
// (docs.tosspayments.com/reference#paymentkey로-결제-조회): 200 and the
// boxoffice.Payment, or 404 NOT_FOUND_PAYMENT.
func (s *Sandbox) getPaymentAPI(ctx context.Context, tx pgx.Tx, r *http.Request, _ []byte) (apiAnswer, []webhook, error) {
	return s.lookUp(ctx, tx, `SELECT `+paymentColumns+` FROM sandbox_pg.sandbox_pg_payment WHERE payment_key = $1`, r.PathValue("paymentKey"))
}

// getPaymentByOrderAPI handles GET /v1/payments/orders/{orderId}
// (docs.tosspayments.com/reference#orderid로-결제-조회): 200 and the order's
// latest payment, or 404 NOT_FOUND_PAYMENT.
func (s *Sandbox) getPaymentByOrderAPI(ctx context.Context, tx pgx.Tx, r *http.Request, _ []byte) (apiAnswer, []webhook, error) {
	return s.lookUp(ctx, tx, `SELECT `+paymentColumns+` FROM sandbox_pg.sandbox_pg_payment WHERE order_id = $1
		ORDER BY seq DESC LIMIT 1`, r.PathValue("orderId"))
}

func (s *Sandbox) lookUp(ctx context.Context, tx pgx.Tx, query, arg string) (apiAnswer, []webhook, error) {
	p, _, err := scanPayment(tx.QueryRow(ctx, query, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return answerNotFound, nil, nil
	} else if err != nil {
		return apiAnswer{}, nil, fmt.Errorf("look up payment: %w", err)
	}
	return paymentAnswer(p), nil, nil
}

// cancelAPI handles POST /v1/payments/{paymentKey}/cancel {"cancelReason",
// "cancelAmount"?, "currency"?} (docs.tosspayments.com/reference#결제-취소),
// in one conditional UPDATE: without cancelAmount, or with the whole balance,
// a DONE or PARTIAL_CANCELED payment becomes CANCELED with balanceAmount 0;
// with less (a partial refund, above 0), PARTIAL_CANCELED with the balance
// reduced; either way with one more entry in cancels. Otherwise: 400
// INVALID_REQUEST without a reason (or one over 200 characters), or with a
// currency other than KRW; 404 NOT_FOUND_PAYMENT; 400 ALREADY_CANCELED_PAYMENT;
// 403 NOT_CANCELABLE_AMOUNT when cancelAmount is not above 0 or more than the
// balance; 403 NOT_CANCELABLE_PAYMENT when the payment was never confirmed.
func (s *Sandbox) cancelAPI(ctx context.Context, tx pgx.Tx, r *http.Request, body []byte) (apiAnswer, []webhook, error) {
	var in struct {
		CancelReason string `json:"cancelReason"`
		CancelAmount *int64 `json:"cancelAmount"`
		Currency     string `json:"currency"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.CancelReason == "" || utf8.RuneCountInString(in.CancelReason) > 200 {
		return answerInvalid("A cancelReason of at most 200 characters is required."), nil, nil
	}
	if in.Currency != "" && !slices.Contains(Currencies, in.Currency) {
		return answerInvalid("The sandbox PG takes KRW only."), nil, nil
	}
	paymentKey := r.PathValue("paymentKey")
	// Every expression reads the row as it was before the UPDATE.
	p, scenario, err := scanPayment(tx.QueryRow(ctx, `UPDATE sandbox_pg.sandbox_pg_payment SET
			status = CASE WHEN coalesce($5::bigint, balance_amount) = balance_amount THEN 'CANCELED' ELSE 'PARTIAL_CANCELED' END,
			balance_amount = balance_amount - coalesce($5::bigint, balance_amount),
			last_transaction_key = $4,
			cancels = cancels || jsonb_build_array(jsonb_build_object(
				'cancelAmount', coalesce($5::bigint, balance_amount), 'cancelReason', $2::text, 'canceledAt', $3::text,
				'transactionKey', $4::text, 'cancelStatus', 'DONE'))
		WHERE payment_key = $1 AND status IN ('DONE', 'PARTIAL_CANCELED')
		  AND ($5::bigint IS NULL OR ($5 > 0 AND $5 <= balance_amount))
		RETURNING `+paymentColumns,
		paymentKey, in.CancelReason, s.now().Format(time.RFC3339), rand.Text(), in.CancelAmount))
	if errors.Is(err, pgx.ErrNoRows) {
		return s.cancelRefused(ctx, tx, paymentKey)
	} else if err != nil {
		return apiAnswer{}, nil, fmt.Errorf("cancel payment: %w", err)
	}
	deliveries, err := s.enqueueWebhooks(ctx, tx, p, scenario)
	if err != nil {
		return apiAnswer{}, nil, err
	}
	return paymentAnswer(p), deliveries, nil
}

// cancelRefused says why cancel changed nothing (see confirmRefused).
func (s *Sandbox) cancelRefused(ctx context.Context, tx pgx.Tx, paymentKey string) (apiAnswer, []webhook, error) {
	var status boxoffice.PaymentStatus
	err := tx.QueryRow(ctx, `SELECT status FROM sandbox_pg.sandbox_pg_payment WHERE payment_key = $1`, paymentKey).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return answerNotFound, nil, nil
	case err != nil:
		return apiAnswer{}, nil, fmt.Errorf("look up payment: %w", err)
	case status == boxoffice.PaymentStatusCanceled:
		return errorAnswer(http.StatusBadRequest, boxoffice.PGAlreadyCanceledPayment, "This is a previously canceled payment."), nil, nil
	case status == boxoffice.PaymentStatusDone || status == boxoffice.PaymentStatusPartialCanceled:
		return errorAnswer(http.StatusForbidden, boxoffice.PGNotCancelableAmount, "The cancel amount is not above 0 or more than the balance."), nil, nil
	}
	return errorAnswer(http.StatusForbidden, boxoffice.PGNotCancelablePayment, "This payment cannot be canceled."), nil, nil
}
