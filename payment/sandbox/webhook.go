package sandbox

import (
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/toss"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// webhookLease is how long an instance owns a delivery past the attempt it
// is due for; another instance takes it over only after that.
const webhookLease = time.Minute

// dbRetryDelay is how long a delivery waits to read or write its row again
// after the sandbox's database failed: a PG's retries outlast its own
// outages, so a delivery goes on until it is done or Close.
const dbRetryDelay = time.Second

// delivery is one webhook delivery running in this instance.
type delivery struct {
	attempted chan struct{} // closed after the first attempt, or when the delivery stops
	once      sync.Once
}

func (d *delivery) markAttempted() { d.once.Do(func() { close(d.attempted) }) }

// newWebhooks returns the PAYMENT_STATUS_CHANGED webhooks of a change of
// payment p (docs.tosspayments.com/guides/v2/webhook), for the transaction
// that changed it to write (queueWebhooks): one, due now, by default; two
// under ScenarioWebhookTwice; one due after LateDelay under
// ScenarioWebhookLate; none under ScenarioWebhookNever or without a
// WebhookURL. A webhook due now is written already leased to this instance
// (lease_until webhookLease past now), so that its first attempt costs no
// commit of its own: the transaction that changed the payment takes the
// lease, and only the attempt's outcome is written afterwards. A late one is
// written unleased and leased when due, as a retry is.
func (s *Sandbox) newWebhooks(p *boxoffice.Payment, scenario string) ([]webhookRow, error) {
	if s.cfg.WebhookURL == "" || scenario == ScenarioWebhookNever {
		return nil, nil
	}
	body, err := json.Marshal(toss.WebhookEvent{
		EventType: toss.EventPaymentStatusChanged,
		CreatedAt: s.cfg.Now().In(kst).Format(toss.WebhookCreatedAtLayout),
		Data:      *p,
	})
	if err != nil {
		return nil, fmt.Errorf("encode webhook: %w", err)
	}
	copies, due, late := 1, time.Now(), scenario == ScenarioWebhookLate
	switch {
	case scenario == ScenarioWebhookTwice:
		copies = 2
	case late:
		due = due.Add(s.cfg.LateDelay)
	}
	row := webhookRow{paymentKey: p.PaymentKey, body: body, due: due}
	if !late {
		until := due.Add(webhookLease)
		row.owner, row.leaseUntil = s.owner, &until
	}
	rows := make([]webhookRow, copies)
	for i := range rows {
		rows[i] = row
	}
	return rows, nil
}

// webhookRow is a webhook to write in the transaction that changed its
// payment: leased to owner until leaseUntil when it is due now, unleased
// ("", nil) otherwise.
type webhookRow struct {
	paymentKey string
	body       []byte
	due        time.Time
	owner      string
	leaseUntil *time.Time
}

// queueWebhooks queues the INSERT of each row on b; readWebhooks reads them.
func queueWebhooks(b *pgx.Batch, rows []webhookRow) {
	for _, w := range rows {
		b.Queue(`INSERT INTO sandbox_pg.sandbox_pg_webhook (payment_key, body, next_at, lease_owner, lease_until)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, w.paymentKey, w.body, w.due, w.owner, w.leaseUntil)
	}
}

// readWebhooks reads queueWebhooks' results: the deliveries to start once
// their transaction committed.
func readWebhooks(br pgx.BatchResults, rows []webhookRow) ([]webhook, error) {
	hooks := make([]webhook, len(rows))
	for i, w := range rows {
		if err := br.QueryRow().Scan(&hooks[i].id); err != nil {
			return nil, fmt.Errorf("insert webhook: %w", err)
		}
		if w.owner != "" {
			hooks[i].leased = w.body
		}
	}
	return hooks, nil
}

// webhook is a delivery to start: its row's id and, when the row was
// written already leased to this instance and due now, its body (nil
// otherwise: the delivery reads the row and leases it when due).
type webhook struct {
	id     int64
	leased []byte
}

// spawn starts delivering webhook w in the background, unless this instance
// runs it already or is closed. The channel closes after the first attempt.
func (s *Sandbox) spawn(w webhook) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.active[w.id]; ok {
		return d.attempted
	}
	d := &delivery{attempted: make(chan struct{})}
	if s.closed {
		d.markAttempted()
		return d.attempted
	}
	s.active[w.id] = d
	s.pending++
	go func() {
		defer s.finished()
		defer func() {
			s.mu.Lock()
			delete(s.active, w.id)
			s.mu.Unlock()
		}()
		defer d.markAttempted()
		s.deliver(w, d)
	}()
	return d.attempted
}

// resume starts the deliveries an earlier instance left undelivered.
func (s *Sandbox) resume() {
	rows, err := s.cfg.Pool.Query(s.ctx, `SELECT id FROM sandbox_pg.sandbox_pg_webhook
		WHERE delivered_at IS NULL AND failed_at IS NULL ORDER BY id`)
	if err != nil {
		s.logDBError("resume webhooks", err)
		return
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		s.logDBError("resume webhooks", err)
		return
	}
	for _, id := range ids {
		s.spawn(webhook{id: id})
	}
}

func (s *Sandbox) logDBError(what string, err error) {
	if s.ctx.Err() == nil {
		s.cfg.Logger.Error("sandbox PG: "+what, "err", err)
	}
}

// waitAfterDBError logs a delivery's database error and waits dbRetryDelay;
// it reports false if Close came first.
func (s *Sandbox) waitAfterDBError(what string, id int64, err error) bool {
	if s.ctx.Err() != nil {
		return false
	}
	s.cfg.Logger.Warn("sandbox PG: "+what+"; retrying", "id", id, "retry_in", dbRetryDelay, "err", err)
	return s.sleepUntil(time.Now().Add(dbRetryDelay))
}

// deliver sends webhook w until it is delivered (2xx), its retries run out
// (cfg.RetryDelays), or Close. Each attempt is made under the delivery's
// lease in PostgreSQL, so that two instances never send it at once: the
// first attempt of a webhook written leased (w.leased) goes out at once,
// every other first takes the lease (see lease); between attempts the lease
// runs past the next one. While the database fails, it tries again every
// dbRetryDelay; an attempt whose outcome could not be stored is made again
// (a webhook may arrive twice, as Toss's may).
func (s *Sandbox) deliver(w webhook, d *delivery) {
	body, attempts := w.leased, 0
	for {
		if body == nil {
			var ok bool
			if body, attempts, ok = s.lease(w.id); !ok {
				return
			}
		}
		sendErr := s.post(body)
		if s.ctx.Err() != nil {
			return // Close interrupted the attempt: it does not count
		}
		more, err := s.recordAttempt(w.id, attempts+1, sendErr)
		d.markAttempted()
		body = nil
		if err != nil {
			if !s.waitAfterDBError("record webhook attempt", w.id, err) {
				return
			}
			continue
		}
		if !more {
			return
		}
	}
}

// lease waits until webhook id is due and its lease is free or this
// instance's, takes the lease (webhookLease past now) and returns the
// webhook's body and the attempts made so far. It reports false when the
// webhook is gone, delivered or given up, or on Close; while the database
// fails, it tries again every dbRetryDelay.
func (s *Sandbox) lease(id int64) ([]byte, int, bool) {
	for {
		var nextAt time.Time
		var leaseUntil *time.Time
		var owner string
		var finished bool
		err := s.cfg.Pool.QueryRow(s.ctx, `SELECT next_at, lease_until, lease_owner,
				delivered_at IS NOT NULL OR failed_at IS NOT NULL
			FROM sandbox_pg.sandbox_pg_webhook WHERE id = $1`, id).Scan(&nextAt, &leaseUntil, &owner, &finished)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, 0, false // nothing to deliver
		} else if err != nil {
			if !s.waitAfterDBError("read webhook", id, err) {
				return nil, 0, false
			}
			continue
		}
		if finished {
			return nil, 0, false
		}
		wakeAt := nextAt
		if owner != s.owner && leaseUntil != nil && leaseUntil.After(wakeAt) {
			wakeAt = *leaseUntil // another instance's; take over if it lapses
		}
		if !s.sleepUntil(wakeAt) {
			return nil, 0, false
		}
		now := time.Now()
		var body []byte
		var attempts int
		err = s.cfg.Pool.QueryRow(s.ctx, `UPDATE sandbox_pg.sandbox_pg_webhook SET lease_owner = $2, lease_until = $3
			WHERE id = $1 AND delivered_at IS NULL AND failed_at IS NULL AND next_at <= $4
			  AND (lease_owner = $2 OR lease_until IS NULL OR lease_until <= $4)
			RETURNING body, attempts`, id, s.owner, now.Add(webhookLease), now).Scan(&body, &attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // delivered, rescheduled or leased by another instance meanwhile: look again
		} else if err != nil {
			if !s.waitAfterDBError("lease webhook", id, err) {
				return nil, 0, false
			}
			continue
		}
		return body, attempts, true
	}
}

// recordAttempt stores an attempt's outcome and reports whether another
// attempt follows. Errors: the database's (nothing was stored).
//
// Its transaction commits without waiting for the WAL's flush
// (synchronous_commit off for it alone, execNoFlush): if PostgreSQL crashes
// before the outcome reaches the disk, the webhook is found undelivered
// and sent again (or tried once more), which a PG's webhooks allow (they
// may arrive twice: the app acts on a look-up, never on the body). A
// payment, an Idempotency-Key's answer or a lease is never written so.
func (s *Sandbox) recordAttempt(id int64, attempts int, sendErr error) (bool, error) {
	now := time.Now()
	var err error
	more := false
	switch {
	case sendErr == nil:
		err = s.execNoFlush(s.ctx, `UPDATE sandbox_pg.sandbox_pg_webhook
			SET attempts = $2, delivered_at = $3, last_error = '', lease_owner = '', lease_until = NULL
			WHERE id = $1 AND lease_owner = $4`, id, attempts, now, s.owner)
	case attempts > len(s.cfg.RetryDelays):
		s.cfg.Logger.Warn("sandbox PG: webhook given up", "id", id, "attempts", attempts, "err", sendErr)
		err = s.execNoFlush(s.ctx, `UPDATE sandbox_pg.sandbox_pg_webhook
			SET attempts = $2, failed_at = $3, last_error = $5, lease_owner = '', lease_until = NULL
			WHERE id = $1 AND lease_owner = $4`, id, attempts, now, s.owner, sendErr.Error())
	default:
		next := now.Add(s.cfg.RetryDelays[attempts-1])
		s.cfg.Logger.Info("sandbox PG: webhook failed, will retry", "id", id, "attempts", attempts, "retry_at", next, "err", sendErr)
		err = s.execNoFlush(s.ctx, `UPDATE sandbox_pg.sandbox_pg_webhook
			SET attempts = $2, next_at = $3, lease_until = $5, last_error = $6
			WHERE id = $1 AND lease_owner = $4`, id, attempts, next, s.owner, next.Add(webhookLease), sendErr.Error())
		more = true
	}
	return more, err
}

// execNoFlush runs one statement in a transaction of its own whose commit
// does not wait for the WAL's flush (SET LOCAL synchronous_commit = off),
// in one round trip. The sandbox stands in for a PG's own servers, which
// would not share this PostgreSQL in a sale: only what it may forget in a
// crash goes through here (recordAttempt); the store never does.
func (s *Sandbox) execNoFlush(ctx context.Context, sql string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit = off`)
	b.Queue(sql, args...)
	b.Queue(`COMMIT`)
	return s.withConn(ctx, func(c *pgx.Conn) error {
		return sendBatch(ctx, c, b, func(pgx.BatchResults) error { return nil })
	})
}

// post sends one webhook body to cfg.WebhookURL; any answer but 2xx is an error.
func (s *Sandbox) post(body []byte) error {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.cfg.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}

// sleepUntil waits until t, and reports false if Close came first.
func (s *Sandbox) sleepUntil(t time.Time) bool {
	wait := time.Until(t)
	if wait <= 0 {
		return s.ctx.Err() == nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}
