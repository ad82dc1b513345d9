package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice/checkout"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

// payments is the wiring of orders and payments: the PG client, the checkout
// service that orchestrates it and the store, the sandbox PG when
// PG_PROVIDER is sandbox, and the background workers (order expiry,
// payment reconciler, retry of pending refunds, outbox relay).
type payments struct {
	pg       *toss.Client
	orders   *store.Orders
	checkout *checkout.Service
	relay    *store.OutboxRelay
	sandbox  *sandbox.Sandbox // nil unless PG_PROVIDER is sandbox
	// sandboxPool is the sandbox's own pool on DATABASE_URL (nil without
	// the sandbox).
	sandboxPool *pgxpool.Pool
	reconcile   time.Duration // RECONCILE_INTERVAL
}

// newPayments builds the orders store and the checkout service on the PG at PG_BASE_URL (with
// PG_PROVIDER=toss, its checkout is our page at BASE_URL/payments/checkout,
// which opens Toss's payment window) and, for
// PG_PROVIDER sandbox, the sandbox PG (mounted by the server under
// /sandbox-pg, sending its webhooks to BASE_URL/payments/webhook).
//
// RECONCILE_INTERVAL paces the reconciler as a whole: it runs every
// interval, first asks the PG about an order two intervals after the order
// was created (the buyer's redirect comes first) and asks again every four,
// so that at the default 30 s these are store.DefaultReconcileGrace and
// store.DefaultReconcileRecheck.
func newPayments(ctx context.Context, cfg Config, db *store.DB, rdb *store.Redis, holds *store.Holds, logger *slog.Logger) (*payments, error) {
	pg := &toss.Client{BaseURL: cfg.PGBaseURL, SecretKey: cfg.PGSecretKey}
	if cfg.PGProvider == "toss" {
		pg.CheckoutPage = cfg.BaseURL + "/payments/checkout"
	}
	orders := &store.Orders{
		DB: db, Holds: holds, TicketSecret: []byte(cfg.SessionSecret), PaymentWindow: cfg.PaymentWindow,
		ReconcileGrace: 2 * cfg.ReconcileInterval, ReconcileRecheck: 4 * cfg.ReconcileInterval, Logger: logger,
	}
	c := &payments{
		pg:     pg,
		orders: orders,
		checkout: &checkout.Service{
			Orders: orders, Refunds: &store.Refunds{DB: db, Holds: holds, Logger: logger}, PG: pg,
			SuccessURL: cfg.BaseURL + "/payments/success", FailURL: cfg.BaseURL + "/payments/fail", Logger: logger,
		},
		relay:     &store.OutboxRelay{DB: db, Redis: rdb, Logger: logger},
		reconcile: cfg.ReconcileInterval,
	}
	if cfg.PGProvider == sandbox.Provider {
		base, err := url.Parse(cfg.BaseURL) // checked by LoadConfig
		if err != nil {
			return nil, fmt.Errorf("BASE_URL: %w", err)
		}
		// The sandbox stands in for the PG's own servers, so its tables get
		// a pool of their own: its calls do not wait for the store's
		// connections, nor the store's for its. Its commits wait for the
		// WAL's flush like the store's: a PG never forgets a payment it
		// took, and TestChaos_PostgresDown's fans come back, after a
		// crash, to payments the sandbox must still know. Only a webhook
		// attempt's outcome commits without waiting (the sandbox's own
		// transaction, SET LOCAL): forgotten, the webhook is sent again.
		pool, err := store.OpenPool(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("sandbox PG: %w", err)
		}
		c.sandboxPool = pool
		sb, err := sandbox.New(ctx, sandbox.Config{
			Provider: cfg.PGProvider, Pool: pool, SecretKey: cfg.PGSecretKey,
			WebhookURL: cfg.BaseURL + "/payments/webhook", ReturnOrigin: base.Scheme + "://" + base.Host, Logger: logger,
		})
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("sandbox PG: %w", err)
		}
		c.sandbox = sb
	}
	return c, nil
}

// sandboxHandler returns the sandbox PG to mount, or nil.
func (c *payments) sandboxHandler() http.Handler {
	if c.sandbox == nil {
		return nil
	}
	return c.sandbox
}

// start runs the workers in the group until stopping ends.
func (c *payments) start(stopping context.Context, workers *sync.WaitGroup) {
	workers.Go(func() { c.orders.RunExpiry(stopping, 0) })
	workers.Go(func() { c.checkout.RunReconciler(stopping, c.reconcile) })
	workers.Go(func() { c.checkout.RunRetry(stopping, c.reconcile) })
	workers.Go(func() { c.relay.Run(stopping, 0) })
}

// close stops the sandbox's webhook deliveries; call it after the workers
// ended and before the database closes.
func (c *payments) close(logger *slog.Logger) {
	if c.sandbox != nil {
		if err := c.sandbox.Close(); err != nil {
			logger.Warn("close the sandbox PG", "err", err)
		}
		c.sandboxPool.Close()
	}
}
