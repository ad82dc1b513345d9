package checkout_test

import (
	"context"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
)

// otherCurrencyPG is the sandbox's client whose look-ups report each
// payment in USD, as a PG would for a payment taken in another currency
// than the order's; confirmLands says whether its confirms still move the
// money (DONE) or are refused with CURRENCY_MISMATCH.
type otherCurrencyPG struct {
	*toss.Client
	confirmLands bool
}

func (g *otherCurrencyPG) Confirm(ctx context.Context, paymentKey, orderID string, amount boxoffice.Money) (*boxoffice.Payment, error) {
	if !g.confirmLands {
		return nil, &boxoffice.PGError{Code: boxoffice.PGCurrencyMismatch, Message: "the PG answered in USD"}
	}
	return g.Client.Confirm(ctx, paymentKey, orderID, amount)
}

func (g *otherCurrencyPG) GetPayment(ctx context.Context, paymentKey string) (*boxoffice.Payment, error) {
	p, err := g.Client.GetPayment(ctx, paymentKey)
	if err == nil {
		p.Currency = "USD"
	}
	return p, err
}

// A payment in another currency than the order's, for the same number of
// minor units, is never taken for the order: the order fails
// (amount_mismatch), and a payment that was confirmed (DONE) is cancelled at
// the PG, while one never confirmed is left to lapse.
func TestService_Confirm_OtherCurrency(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		lands    bool
		outcome  boxoffice.PaymentOutcome
		pgStatus boxoffice.PaymentStatus
	}{
		{"Confirmed", true, boxoffice.PaymentRefunded, boxoffice.PaymentStatusCanceled},
		{"NeverConfirmed", false, boxoffice.PaymentRejected, boxoffice.PaymentStatusInProgress},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := checkouttest.New(t, 4)
			o := env.Order(t, env.Account(t), env.Event.R[0])
			key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
			service := env.NewService(env.Orders, &otherCurrencyPG{Client: env.PG, confirmLands: tt.lands})
			c, err := service.Confirm(context.Background(), o.ID, key, &amount)
			if err != nil {
				t.Fatalf("Confirm: %v", err)
			}
			checkouttest.WantOrder(t, c.Order, boxoffice.OrderFailed, boxoffice.ReasonAmountMismatch)
			if c.Outcome != tt.outcome || len(c.Order.Tickets) != 0 {
				t.Errorf("outcome %q with %d tickets, want %q with none", c.Outcome, len(c.Order.Tickets), tt.outcome)
			}
			if st := env.PGStatus(t, key); st != tt.pgStatus {
				t.Errorf("the PG's payment is %s, want %s", st, tt.pgStatus)
			}
			if n := env.Count(t, `SELECT count(*) FROM sold_seat WHERE order_id = $1`, o.ID); n != 0 {
				t.Errorf("%d seats sold, want none", n)
			}
		})
	}
}
