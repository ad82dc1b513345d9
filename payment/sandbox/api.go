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
	"github.com/jackc/pgx/v5/pgconn"
)

// apiAnswer is one answer of the sandbox's API: a status and a JSON body.
type apiAnswer struct {
	status int
	body   []byte
}

// apiOp performs one API call: a look-up (GET) on the pool, one statement
// with no transaction of its own; a change (POST) on the connection of the
// transaction the api wrapper opened, returning the answer and the webhooks
// of the change, which the wrapper writes in that transaction and starts
// after its commit. An error is a failure of the sandbox itself (500).
type apiOp func(ctx context.Context, q querier, r *http.Request, body []byte) (apiAnswer, []webhookRow, error)

// querier runs statements: a pool (one statement, its own transaction) or
// the connection of an open transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

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
// a bounded body; and, for POST, one transaction (apiTx) and the
// Idempotency-Key: the first answer for a key, method and path is stored in
// the transaction that produced it and replayed for every repeat. A repeat
// that arrives while the first is running waits for it (the key's row is
// locked until its commit). A GET reads one row with no transaction.
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
		if r.Method == http.MethodPost {
			err = s.withConn(ctx, func(c *pgx.Conn) error {
				var err error
				ans, deliveries, err = s.apiTx(ctx, c, op, r, body, idemKey)
				return err
			})
		} else {
			ans, _, err = op(ctx, s.cfg.Pool, r, body)
		}
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

// apiTx runs a POST's op in one transaction on c, in three round trips:
// BEGIN with the Idempotency-Key's claim; the op's own statement; then its
// webhooks, the answer stored for the key and COMMIT, in one batch. A
// repeat of a key takes two: BEGIN with the claim, which waits for a first
// still running, then the first's answer read with COMMIT (the transaction
// wrote nothing). It returns the answer and the webhooks to start.
func (s *Sandbox) apiTx(ctx context.Context, c *pgx.Conn, op apiOp, r *http.Request, body []byte, idemKey string) (apiAnswer, []webhook, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	if idemKey != "" {
		b.Queue(`INSERT INTO sandbox_pg.sandbox_pg_idempotency (idempotency_key, method, path)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, idemKey, r.Method, r.URL.Path)
	}
	claimed := true
	err := sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if idemKey == "" {
			return nil
		}
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("claim idempotency key: %w", err)
		}
		claimed = tag.RowsAffected() == 1
		return nil
	})
	if err != nil {
		return apiAnswer{}, nil, err
	}
	var ans apiAnswer
	if !claimed {
		b := &pgx.Batch{}
		b.Queue(`SELECT status, body FROM sandbox_pg.sandbox_pg_idempotency
			WHERE idempotency_key = $1 AND method = $2 AND path = $3`, idemKey, r.Method, r.URL.Path)
		b.Queue(`COMMIT`)
		err := sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
			if err := br.QueryRow().Scan(&ans.status, &ans.body); err != nil {
				return fmt.Errorf("replay idempotency key: %w", err)
			}
			return nil
		})
		return ans, nil, err
	}
	ans, rows, err := op(ctx, c, r, body)
	if err != nil {
		return apiAnswer{}, nil, err
	}
	var stored *storedAnswer
	if idemKey != "" {
		stored = &storedAnswer{key: idemKey, method: r.Method, path: r.URL.Path, ans: ans}
	}
	hooks, err := commitChange(ctx, c, rows, stored)
	return ans, hooks, err
}

// storedAnswer is an Idempotency-Key's first answer, to store.
type storedAnswer struct {
	key, method, path string
	ans               apiAnswer
}

// commitChange ends the transaction open on c in one batch: the webhooks'
// rows, the key's answer when stored is not nil, and COMMIT. It returns the
// webhooks to start.
func commitChange(ctx context.Context, c *pgx.Conn, rows []webhookRow, stored *storedAnswer) ([]webhook, error) {
	b := &pgx.Batch{}
	queueWebhooks(b, rows)
	if stored != nil {
		b.Queue(`UPDATE sandbox_pg.sandbox_pg_idempotency SET status = $4, body = $5
			WHERE idempotency_key = $1 AND method = $2 AND path = $3`, stored.key, stored.method, stored.path, stored.ans.status, stored.ans.body)
	}
	b.Queue(`COMMIT`)
	var hooks []webhook
	err := sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
		var err error
		if hooks, err = readWebhooks(br, rows); err != nil {
			return err
		}
		if stored != nil {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("store idempotent answer: %w", err)
			}
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hooks, nil
}

// withConn runs fn on one connection of the sandbox's pool, then rolls back
// a transaction that fn left open (a statement failed, which skips the rest
// of its batch, COMMIT included) before the connection goes back.
func (s *Sandbox) withConn(ctx context.Context, fn func(c *pgx.Conn) error) error {
	pc, err := s.cfg.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release()
	c := pc.Conn()
	err = fn(c)
	if c.PgConn().TxStatus() != 'I' && !c.IsClosed() {
		if _, rerr := c.Exec(context.WithoutCancel(ctx), `ROLLBACK`); rerr != nil && err == nil {
			err = fmt.Errorf("roll back: %w", rerr)
		}
		if err == nil {
			err = errors.New("the transaction was left open")
		}
	}
	return err
}

// sendBatch sends b on c and hands its results to read, then closes them
// (reading what read left unread): the first error wins.
func sendBatch(ctx context.Context, c *pgx.Conn, b *pgx.Batch, read func(br pgx.BatchResults) error) error {
	br := c.SendBatch(ctx, b)
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
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
func (s *Sandbox) confirmAPI(ctx context.Context, q querier, _ *http.Request, body []byte) (apiAnswer, []webhookRow, error) {
	var in struct {
		PaymentKey string `json:"paymentKey"`
		OrderID    string `json:"orderId"`
		Amount     int64  `json:"amount"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.PaymentKey == "" || in.OrderID == "" || in.Amount <= 0 {
		return answerInvalid("paymentKey, orderId and a positive amount are required."), nil, nil
	}
	return s.confirm(ctx, q, in.PaymentKey, in.OrderID, in.Amount)
}

// confirm moves an authenticated (IN_PROGRESS) payment to DONE, or to ABORTED
// with 400 INVALID_REJECT_CARD under ScenarioRejectCard, in one conditional
// UPDATE, so that of any number of concurrent confirms exactly one changes
// the payment. The others answer: 404 NOT_FOUND_PAYMENT for an unknown key,
// 400 INVALID_REQUEST when orderId or amount differ from the payment's, 400
// ALREADY_PROCESSED_PAYMENT when it left IN_PROGRESS before.
func (s *Sandbox) confirm(ctx context.Context, q querier, paymentKey, orderID string, amount int64) (apiAnswer, []webhookRow, error) {
	p, scenario, err := scanPayment(q.QueryRow(ctx, `UPDATE sandbox_pg.sandbox_pg_payment SET
			status = CASE WHEN scenario = $4 THEN 'ABORTED' ELSE 'DONE' END,
			approved_at = CASE WHEN scenario = $4 THEN NULL ELSE $5::timestamptz END,
			failure_code = CASE WHEN scenario = $4 THEN $6::text ELSE '' END,
			failure_message = CASE WHEN scenario = $4 THEN $7::text ELSE '' END,
			last_transaction_key = $8
		WHERE payment_key = $1 AND order_id = $2 AND total_amount = $3 AND status = 'IN_PROGRESS'
		RETURNING `+paymentColumns,
		paymentKey, orderID, amount, ScenarioRejectCard, s.now(), boxoffice.PGInvalidRejectCard, rejectCardMessage, rand.Text()))
	if errors.Is(err, pgx.ErrNoRows) {
		return s.confirmRefused(ctx, q, paymentKey, orderID, amount)
	} else if err != nil {
		return apiAnswer{}, nil, fmt.Errorf("confirm payment: %w", err)
	}
	rows, err := s.newWebhooks(p, scenario)
	if err != nil {
		return apiAnswer{}, nil, err
	}
	if p.Status == boxoffice.PaymentStatusAborted {
		return errorAnswer(http.StatusBadRequest, boxoffice.PGInvalidRejectCard, rejectCardMessage), rows, nil
	}
	return paymentAnswer(p), rows, nil
}

// confirmRefused says why confirm changed nothing. Payments only move
// forward, so what it reads still explains the UPDATE's miss.
func (s *Sandbox) confirmRefused(ctx context.Context, q querier, paymentKey, orderID string, amount int64) (apiAnswer, []webhookRow, error) {
	var gotOrderID string
	var gotAmount int64
	err := q.QueryRow(ctx, `SELECT order_id, total_amount FROM sandbox_pg.sandbox_pg_payment WHERE payment_key = $1`, paymentKey).
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
func (s *Sandbox) getPaymentAPI(ctx context.Context, q querier, r *http.Request, _ []byte) (apiAnswer, []webhookRow, error) {
	return s.lookUp(ctx, q, `SELECT `+paymentColumns+` FROM sandbox_pg.sandbox_pg_payment WHERE payment_key = $1`, r.PathValue("paymentKey"))
}

// getPaymentByOrderAPI handles GET /v1/payments/orders/{orderId}
// (docs.tosspayments.com/reference#orderid로-결제-조회): 200 and the order's
// latest payment, or 404 NOT_FOUND_PAYMENT.
func (s *Sandbox) getPaymentByOrderAPI(ctx context.Context, q querier, r *http.Request, _ []byte) (apiAnswer, []webhookRow, error) {
	return s.lookUp(ctx, q, `SELECT `+paymentColumns+` FROM sandbox_pg.sandbox_pg_payment WHERE order_id = $1
		ORDER BY seq DESC LIMIT 1`, r.PathValue("orderId"))
}

func (s *Sandbox) lookUp(ctx context.Context, q querier, query, arg string) (apiAnswer, []webhookRow, error) {
	p, _, err := scanPayment(q.QueryRow(ctx, query, arg))
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
func (s *Sandbox) cancelAPI(ctx context.Context, q querier, r *http.Request, body []byte) (apiAnswer, []webhookRow, error) {
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
	p, scenario, err := scanPayment(q.QueryRow(ctx, `UPDATE sandbox_pg.sandbox_pg_payment SET
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
		return s.cancelRefused(ctx, q, paymentKey)
	} else if err != nil {
		return apiAnswer{}, nil, fmt.Errorf("cancel payment: %w", err)
	}
	rows, err := s.newWebhooks(p, scenario)
	if err != nil {
		return apiAnswer{}, nil, err
	}
	return paymentAnswer(p), rows, nil
}

// cancelRefused says why cancel changed nothing (see confirmRefused).
func (s *Sandbox) cancelRefused(ctx context.Context, q querier, paymentKey string) (apiAnswer, []webhookRow, error) {
	var status boxoffice.PaymentStatus
	err := q.QueryRow(ctx, `SELECT status FROM sandbox_pg.sandbox_pg_payment WHERE payment_key = $1`, paymentKey).Scan(&status)
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
