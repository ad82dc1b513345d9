// Package sandbox is a payment gateway (PG) of our own for development and
// tests: it answers the Toss Payments API (confirm, look-up, cancel, the
// webhooks) like Toss does, with a checkout page in place of Toss's payment
// window, and keeps its state in PostgreSQL in a schema of its own,
// sandbox_pg, which it creates at start-up. It runs only with
// PG_PROVIDER=sandbox. The app reaches it over HTTP with payment/toss's
// client, exactly as it would reach Toss.
//
// The model (docs.tosspayments.com/guides/v2/payment-widget/integration,
// "결제 승인"): the buyer authenticates at the PG, which redirects to the
// merchant's successUrl with paymentKey, orderId and amount; nothing is charged
// until the merchant confirms with POST /v1/payments/confirm, within about 10
// minutes. README.md ("Payments") has the rest.
package sandbox

import (
	_ "embed"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/toss"

	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/boxoffice/boxoffice/views"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Provider is the PG_PROVIDER value under which the sandbox runs.
const Provider = "sandbox"

// Currencies are the ISO 4217 codes the sandbox takes payments in: won, as
// Toss's payment window for a Korean merchant (toss.TossCurrencies).
var Currencies = toss.TossCurrencies

// Test scenarios, chosen per checkout (the page's "scenario" field) and kept
// with the payment. Each makes the sandbox misbehave the way a PG or a buyer
// can, so that every path of the confirmation can be tested.
const (
	// ScenarioDefault sends one webhook right after each status change
	// (confirm: DONE or ABORTED; cancel: CANCELED).
	ScenarioDefault = ""
	// ScenarioWebhookTwice sends every webhook twice, concurrently.
	ScenarioWebhookTwice = "webhook_twice"
	// ScenarioWebhookLate sends every webhook Config.LateDelay after the change.
	ScenarioWebhookLate = "webhook_late"
	// ScenarioWebhookBeforeRedirect makes the sandbox confirm the payment
	// itself (DONE) and deliver the webhook before it redirects the buyer, so
	// that the app's own confirm answers ALREADY_PROCESSED_PAYMENT.
	ScenarioWebhookBeforeRedirect = "webhook_before_redirect"
	// ScenarioWebhookNever sends no webhook for the payment.
	ScenarioWebhookNever = "webhook_never"
	// ScenarioTamperAmount puts a different amount in the success redirect
	// than the payment's (amount-1000, or amount+1000 for 1000 won or less),
	// as a buyer editing the URL would.
	ScenarioTamperAmount = "tamper_amount"
	// ScenarioPayLess records the payment for 1000 won less than asked (at
	// least 1) and redirects with that amount: the app must not confirm it.
	ScenarioPayLess = "pay_less"
	// ScenarioRejectCard makes the confirm answer 400 INVALID_REJECT_CARD and
	// leaves the payment ABORTED.
	ScenarioRejectCard = "reject_card"
)

// Scenarios lists every scenario, the default first.
var Scenarios = []string{
	ScenarioDefault, ScenarioWebhookTwice, ScenarioWebhookLate, ScenarioWebhookBeforeRedirect,
	ScenarioWebhookNever, ScenarioTamperAmount, ScenarioPayLess, ScenarioRejectCard,
}

// Defaults of Config.
const (
	DefaultLateDelay = 30 * time.Second
	// maxRequestBytes bounds a request body of the sandbox.
	maxRequestBytes = 64 << 10
)

// DefaultRetryDelays are the waits between webhook attempts when
// Config.RetryDelays is nil: seven retries, like Toss (which spreads
// them over about four days, docs.tosspayments.com/guides/v2/webhook), but
// sooner, since the sandbox serves development and tests.
var DefaultRetryDelays = []time.Duration{
	time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 4 * time.Hour,
}

// kst is Korea's time zone (no daylight saving), in which Toss writes times.
var kst = time.FixedZone("KST", 9*60*60)

// Config configures a Sandbox.
type Config struct {
	// Provider is the configured PG_PROVIDER; anything but "sandbox" makes
	// New refuse.
	Provider string
	// Pool is the PostgreSQL pool in whose database the sandbox keeps its
	// tables, in the schema sandbox_pg (Schema, schema.sql), which New
	// creates if it is missing.
	Pool *pgxpool.Pool
	// SecretKey is the API key the sandbox accepts in Basic authentication.
	SecretKey string
	// WebhookURL receives PAYMENT_STATUS_CHANGED webhooks (the app's
	// /payments/webhook); "" sends none.
	WebhookURL string
	// ReturnOrigin, when not "", is the only origin (scheme://host[:port],
	// the app's BASE_URL) that successUrl and failUrl may point at: the
	// sandbox runs on the app's own address, so a checkout link crafted
	// elsewhere must not turn it into an open redirect. "" accepts any
	// absolute http(s) URL.
	ReturnOrigin string
	// LateDelay is how late ScenarioWebhookLate delivers; 0 means DefaultLateDelay.
	LateDelay time.Duration
	// RetryDelays are the waits before each retry of a webhook that failed
	// (non-2xx or a network error); after the last, it is given up. nil means
	// DefaultRetryDelays; an empty, non-nil slice means no retry.
	RetryDelays []time.Duration
	// Now stamps the payments' times (requestedAt, approvedAt, canceledAt,
	// the webhooks' createdAt); nil means time.Now. Webhook scheduling uses
	// the real clock, since it waits on timers.
	Now func() time.Time
	// HTTP sends the webhooks; nil means a client with a 10 s timeout that
	// keeps its connections to WebhookURL open between deliveries
	// (toss.KeepAliveTransport), since a sale sends hundreds at once.
	HTTP *http.Client
	// Logger logs webhook failures and database errors; nil means slog.Default().
	Logger *slog.Logger
}

// Sandbox is a PG that answers the Toss Payments API (see package doc) from
// PostgreSQL, with a checkout page in place of Toss's payment window. It is an
// http.Handler whose paths are relative to its mount point, /sandbox-pg: mount
// it with http.StripPrefix("/sandbox-pg", sandbox). Routes:
//
//	GET  /checkout                        the payment page
//	POST /checkout                        pay or decline (the page's form)
//	POST /v1/payments/confirm             confirm
//	GET  /v1/payments/{paymentKey}        look up by payment key
//	GET  /v1/payments/orders/{orderId}    look up the order's latest payment
//	POST /v1/payments/{paymentKey}/cancel cancel (refund in full or in part)
//
// Every state change is one PostgreSQL transaction with a conditional UPDATE,
// so any number of instances and concurrent calls agree. Webhooks are written
// in that transaction and delivered afterwards by background goroutines, which
// Close stops; an instance started later delivers what is left. It is safe
// for concurrent use.
type Sandbox struct {
	cfg   Config
	mux   *http.ServeMux
	owner string // this instance's name on the webhook leases it holds

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu      sync.Mutex
	idle    *sync.Cond // signalled when pending drops to 0
	pending int        // running goroutines: deliveries and the start-up resume
	closed  bool
	active  map[int64]*delivery // deliveries running in this instance, by id
}

// Schema is the PostgreSQL schema of the sandbox's tables.
const Schema = "sandbox_pg"

// schemaSQL creates the schema and its tables if they are missing.
//
//go:embed schema.sql
var schemaSQL string

// schemaLock is the key of the advisory lock under which instances starting
// together create the schema one at a time (CREATE ... IF NOT EXISTS is not
// safe against a concurrent CREATE).
const schemaLock = 4242015

// createSchema creates the sandbox's schema and tables where they are
// missing, in one transaction under an advisory lock; it changes nothing
// where they exist.
func createSchema(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, schemaLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schemaSQL)
		return err
	})
}

// New returns a sandbox PG and starts delivering the webhooks that an
// earlier instance left undelivered. Errors: when cfg.Provider is not
// "sandbox" (the sandbox must never stand in for a real PG), and when Pool or
// SecretKey is missing, and PostgreSQL's when the schema cannot be created
// (see createSchema). Call Close before closing the pool.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if cfg.Provider != Provider {
		return nil, fmt.Errorf("sandbox PG: refusing to run with PG_PROVIDER %q: it runs only when PG_PROVIDER is %q", cfg.Provider, Provider)
	}
	if cfg.Pool == nil {
		return nil, errors.New("sandbox PG: no database pool")
	}
	if cfg.SecretKey == "" {
		return nil, errors.New("sandbox PG: no secret key")
	}
	if err := createSchema(ctx, cfg.Pool); err != nil {
		return nil, fmt.Errorf("sandbox PG: create schema %s: %w", Schema, err)
	}
	if cfg.LateDelay == 0 {
		cfg.LateDelay = DefaultLateDelay
	}
	if cfg.RetryDelays == nil {
		cfg.RetryDelays = DefaultRetryDelays
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second, Transport: toss.KeepAliveTransport()}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Sandbox{cfg: cfg, owner: rand.Text(), active: map[int64]*delivery{}}
	s.idle = sync.NewCond(&s.mu)
	s.ctx, s.cancel = context.WithCancel(context.Background())

	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /checkout", s.handleCheckoutPage)
	s.mux.HandleFunc("POST /checkout", s.handleCheckout)
	s.mux.HandleFunc("POST /v1/payments/confirm", s.api(s.confirmAPI))
	s.mux.HandleFunc("GET /v1/payments/{paymentKey}", s.api(s.getPaymentAPI))
	s.mux.HandleFunc("GET /v1/payments/orders/{orderId}", s.api(s.getPaymentByOrderAPI))
	s.mux.HandleFunc("POST /v1/payments/{paymentKey}/cancel", s.api(s.cancelAPI))

	s.pending++
	go func() {
		defer s.finished()
		s.resume()
	}()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Sandbox) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Wait blocks until this instance has no webhook delivery running: each has
// been delivered, given up after its retries, or stopped by Close. Deliveries
// started during Wait are waited for too.
func (s *Sandbox) Wait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.pending > 0 {
		s.idle.Wait()
	}
}

// Close stops the webhook deliveries, waits for them, and hands their leases
// back so that the next instance delivers what is left at once. Webhooks due
// after Close stay in the database. It returns the error of handing the
// leases back.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.cfg.Pool.Exec(ctx, `UPDATE sandbox_pg.sandbox_pg_webhook SET lease_owner = '', lease_until = NULL
		WHERE lease_owner = $1 AND delivered_at IS NULL AND failed_at IS NULL`, s.owner)
	if err != nil {
		return fmt.Errorf("sandbox PG: release webhook leases: %w", err)
	}
	return nil
}

// finished marks one background goroutine done.
func (s *Sandbox) finished() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
	if s.pending == 0 {
		s.idle.Broadcast()
	}
}

// now is the sandbox's clock in Korea's zone, to the second, as Toss writes times.
func (s *Sandbox) now() time.Time { return s.cfg.Now().In(kst).Truncate(time.Second) }

// checkoutForm is a checkout request, from the query string (GET) or the form (POST).
type checkoutForm struct {
	orderID, orderName, successURL, failURL string
	amount                                  int64
	action, scenario                        string
}

// parseCheckout reads and validates the checkout fields, returning the names
// of the invalid ones. withAction also reads action and scenario (POST).
func (s *Sandbox) parseCheckout(v url.Values, withAction bool) (checkoutForm, []string) {
	f := checkoutForm{
		orderID:    v.Get("orderId"),
		orderName:  v.Get("orderName"),
		successURL: v.Get("successUrl"),
		failURL:    v.Get("failUrl"),
		action:     v.Get("action"),
		scenario:   v.Get("scenario"),
	}
	var bad []string
	if !boxoffice.ValidOrderID(f.orderID) {
		bad = append(bad, "orderId")
	}
	amount, err := strconv.ParseInt(v.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		bad = append(bad, "amount")
	}
	f.amount = amount
	if f.orderName == "" || utf8.RuneCountInString(f.orderName) > 100 || !utf8.ValidString(f.orderName) {
		bad = append(bad, "orderName")
	}
	if !s.returnURL(f.successURL) {
		bad = append(bad, "successUrl")
	}
	if !s.returnURL(f.failURL) {
		bad = append(bad, "failUrl")
	}
	if withAction {
		if f.action != "pay" && f.action != "decline" {
			bad = append(bad, "action")
		}
		if !slices.Contains(Scenarios, f.scenario) {
			bad = append(bad, "scenario")
		}
	}
	return f, bad
}

// maxReturnURLLen bounds successUrl and failUrl, in bytes: the buyer is
// redirected there, so they end up in a Location header.
const maxReturnURLLen = 2048

// returnURL reports whether raw may be a checkout's successUrl or failUrl:
// an absolute http(s) URL of at most maxReturnURLLen bytes, on
// cfg.ReturnOrigin when that is set.
func (s *Sandbox) returnURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || len(raw) > maxReturnURLLen || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return false
	}
	return s.cfg.ReturnOrigin == "" || strings.EqualFold(u.Scheme+"://"+u.Host, s.cfg.ReturnOrigin)
}

// handleCheckoutPage handles GET /checkout?orderId&amount&orderName&successUrl&failUrl:
// the payment page, standing in for Toss's payment window. Invalid fields: 400
// and a page naming them.
func (s *Sandbox) handleCheckoutPage(w http.ResponseWriter, r *http.Request) {
	f, bad := s.parseCheckout(r.URL.Query(), false)
	if len(bad) > 0 {
		s.renderInvalid(w, r, bad)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	page := views.SandboxPGCheckoutPage(views.SandboxPGCheckout{
		OrderID: f.orderID, OrderName: f.orderName, Amount: f.amount,
		SuccessURL: f.successURL, FailURL: f.failURL, Scenarios: Scenarios,
	})
	if err := page.Render(r.Context(), w); err != nil {
		s.cfg.Logger.Error("sandbox PG: render checkout page", "err", err)
	}
}

// handleCheckout handles POST /checkout: the buyer's Pay or Decline. Pay
// records an authenticated payment (IN_PROGRESS: nothing charged until the
// merchant confirms) and answers 303 to
// successUrl?paymentKey&orderId&amount&paymentType=NORMAL; Decline answers 303
// to failUrl?code=PAY_PROCESS_CANCELED&message&orderId, as Toss's payment
// window redirects (docs.tosspayments.com/guides/v2/payment-widget/integration,
// "결제 요청"). Invalid fields: 400 and a page naming them.
func (s *Sandbox) handleCheckout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
	if err := r.ParseForm(); err != nil {
		s.renderInvalid(w, r, []string{"form"})
		return
	}
	f, bad := s.parseCheckout(r.PostForm, true)
	if len(bad) > 0 {
		s.renderInvalid(w, r, bad)
		return
	}
	if f.action == "decline" {
		http.Redirect(w, r, withQuery(f.failURL, url.Values{
			"code":    {boxoffice.PGPayProcessCanceled},
			"message": {"Payment has been canceled by the customer."},
			"orderId": {f.orderID},
		}), http.StatusSeeOther)
		return
	}

	amount, redirectAmount := f.amount, f.amount
	switch f.scenario {
	case ScenarioPayLess:
		amount = max(f.amount-1000, 1)
		redirectAmount = amount
	case ScenarioTamperAmount:
		redirectAmount = f.amount - 1000
		if redirectAmount <= 0 {
			redirectAmount = f.amount + 1000
		}
	}
	paymentKey := "tsbx" + rand.Text()
	ctx := r.Context()
	insert := func(q querier) error {
		_, err := q.Exec(ctx, `INSERT INTO sandbox_pg.sandbox_pg_payment
			(payment_key, order_id, order_name, status, total_amount, balance_amount, scenario, requested_at)
			VALUES ($1, $2, $3, $4, $5, $5, $6, $7)`,
			paymentKey, f.orderID, f.orderName, boxoffice.PaymentStatusInProgress, amount, f.scenario, s.now())
		if err != nil {
			return fmt.Errorf("insert payment: %w", err)
		}
		return nil
	}
	var deliveries []webhook
	var err error
	if f.scenario != ScenarioWebhookBeforeRedirect {
		err = insert(s.cfg.Pool) // one statement, its own transaction
	} else {
		// The payment, its confirm and its webhook in one transaction.
		err = s.withConn(ctx, func(c *pgx.Conn) error {
			if _, err := c.Exec(ctx, `BEGIN`); err != nil {
				return fmt.Errorf("begin: %w", err)
			}
			if err := insert(c); err != nil {
				return err
			}
			_, rows, err := s.confirm(ctx, c, paymentKey, f.orderID, amount)
			if err != nil {
				return err
			}
			deliveries, err = commitChange(ctx, c, rows, nil)
			return err
		})
	}
	if err != nil {
		s.cfg.Logger.Error("sandbox PG: checkout", "order_id", f.orderID, "err", err)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		if err := views.SandboxPGFailedPage().Render(r.Context(), w); err != nil {
			s.cfg.Logger.Error("sandbox PG: render failure page", "err", err)
		}
		return
	}
	// ScenarioWebhookBeforeRedirect: the first attempt of each webhook ends
	// before the buyer is redirected.
	for _, hook := range deliveries {
		select {
		case <-s.spawn(hook):
		case <-r.Context().Done():
		}
	}
	http.Redirect(w, r, withQuery(f.successURL, url.Values{
		"paymentKey":  {paymentKey},
		"orderId":     {f.orderID},
		"amount":      {strconv.FormatInt(redirectAmount, 10)},
		"paymentType": {"NORMAL"},
	}), http.StatusSeeOther)
}

func (s *Sandbox) renderInvalid(w http.ResponseWriter, r *http.Request, fields []string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	if err := views.SandboxPGInvalidPage(fields).Render(r.Context(), w); err != nil {
		s.cfg.Logger.Error("sandbox PG: render invalid page", "err", err)
	}
}

// withQuery adds q to the query string of rawURL, which parseCheckout validated.
func withQuery(rawURL string, q url.Values) string {
	u, _ := url.Parse(rawURL)
	v := u.Query()
	for k, vals := range q {
		v[k] = vals
	}
	u.RawQuery = v.Encode()
	return u.String()
}
