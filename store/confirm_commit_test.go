package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
)

// The webhook arrives while the redirect's transaction is open, before its
// commit: it waits for that commit and returns the same result.
func TestOrders_Confirm_WebhookBeforeCommit(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	ctx := context.Background()
	o := env.Order(t, env.Account(t), env.Event.R[0])
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)

	inTx, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	store.SetBeforeCommit(env.Orders, func(orderID, _ string) {
		if orderID == o.ID {
			once.Do(func() {
				close(inTx)
				<-release
			})
		}
	})
	redirected := make(chan *boxoffice.Confirmation)
	go func() {
		c, err := env.Redirect(o.ID, key, amount)
		if err != nil {
			t.Errorf("redirect: %v", err)
		}
		redirected <- c
	}()
	<-inTx
	webhooked := make(chan *boxoffice.Confirmation)
	go func() {
		c, err := env.Checkout.ConfirmWebhook(ctx, key, o.ID)
		if err != nil {
			t.Errorf("webhook: %v", err)
		}
		webhooked <- c
	}()
	select {
	case c := <-webhooked:
		t.Fatalf("the webhook returned %+v while the redirect's transaction was open, want it to wait", c)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	r, w := <-redirected, <-webhooked
	if r == nil || w == nil || r.Outcome != boxoffice.PaymentConfirmed || w.Outcome != r.Outcome ||
		!slices.Equal(checkouttest.TicketIDs(r.Order), checkouttest.TicketIDs(w.Order)) || len(r.Order.Tickets) != 1 {
		t.Fatalf("redirect %+v, webhook %+v: want both confirmed with the same ticket", r, w)
	}
	env.CheckInvariants(t)
}
