// Package checkout takes payments: it is the one place where the PG's calls
// (boxoffice.PaymentGateway) and the store's transactions meet. Every
// operation asks the PG first and then runs one store step, one transaction,
// so that no network call is ever made while PostgreSQL holds a lock, and
// neither the store nor the PG's packages know of each other. The success
// redirect, the webhook, the reconciler, the admin's refunds, the PG's own
// cancels and the retry of pending refunds all go through Service.
package checkout

import (
	"log/slog"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
)

var (
	_ boxoffice.CheckoutService = (*Service)(nil)
	_ boxoffice.RefundService   = (*Service)(nil)
)

// Defaults of the background workers.
const (
	// DefaultReconcileInterval is how often Reconcile runs (RunReconciler).
	DefaultReconcileInterval = store.DefaultReconcileInterval
	// DefaultRefundRetry is how old a pending refund must be before
	// RetryPending asks the PG again (under the refund's own
	// Idempotency-Key, so the PG refunds at most once), and how often
	// RunRetry runs.
	DefaultRefundRetry = 30 * time.Second
)

// Service orchestrates the PG and the store: checkout (where the buyer pays),
// the one confirmation routine (Confirm, ConfirmWebhook, Reconcile) and
// refunds (Refund, ApplyPGCancels, RetryPending). It implements
// boxoffice.CheckoutService and boxoffice.RefundService. Set the fields
// before first use; it is safe for concurrent use by any number of
// goroutines and instances.
type Service struct {
	Orders  *store.Orders
	Refunds *store.Refunds
	PG      boxoffice.PaymentGateway
	// SuccessURL and FailURL are where the PG sends the buyer back:
	// BASE_URL/payments/success and BASE_URL/payments/fail.
	SuccessURL, FailURL string
	// Logger receives what the PG answered that the caller is not told, and
	// what the workers could not do (slog.Default when nil).
	Logger *slog.Logger

	// mu guards calls: the confirmations under way, by order and payment
	// (Confirm).
	mu    sync.Mutex
	calls map[string]*confirmCall
	// joining, when set (tests), runs when a Confirm starts waiting for
	// another.
	joining func(orderID, paymentKey string)
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// CheckoutURL returns where to send the buyer to pay for the order: the
// PG's payment window for CheckoutRequest(o).
func (s *Service) CheckoutURL(o *boxoffice.Order) string {
	return s.PG.CheckoutURL(s.CheckoutRequest(o))
}

// CheckoutRequest returns what the PG's payment window needs for the order:
// its id, name and amount with currency (minor units), and SuccessURL and
// FailURL.
func (s *Service) CheckoutRequest(o *boxoffice.Order) boxoffice.CheckoutRequest {
	return boxoffice.CheckoutRequest{OrderID: o.ID, OrderName: o.Name, Amount: o.Amount, SuccessURL: s.SuccessURL, FailURL: s.FailURL}
}
