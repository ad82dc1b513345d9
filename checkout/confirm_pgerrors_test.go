package checkout_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
)

// refusingPG answers every call with the same final error, as Toss does to
// a deployment with a wrong secret key.
type refusingPG struct {
	*toss.Client
	err error
}

func (g *refusingPG) Confirm(context.Context, string, string, boxoffice.Money) (*boxoffice.Payment, error) {
	return nil, g.err
}

func (g *refusingPG) GetPayment(context.Context, string) (*boxoffice.Payment, error) {
	return nil, g.err
}

// A PG that refuses the deployment's key (INVALID_API_KEY, UNAUTHORIZED_KEY)
// is a wait for the buyer (EUNAVAILABLE, with a sentence), never a failure
// of the order nor an error without a code (a 500 page); nothing is
// recorded, and the payment is confirmed once the PG answers again.
func TestService_Confirm_PGRefusesTheKey(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 6)
	ctx := context.Background()
	o := env.Order(t, env.Account(t), env.Event.R[0])
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	for _, code := range []string{boxoffice.PGInvalidAPIKey, boxoffice.PGUnauthorizedKey} {
		refusing := env.NewService(env.Orders, &refusingPG{Client: env.PG, err: &boxoffice.PGError{Status: http.StatusBadRequest, Code: code, Message: "bad key"}})
		_, err := refusing.Confirm(ctx, o.ID, key, &amount)
		if boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE || boxoffice.ErrorMsg(err).ID != "err_pg_refused" {
			t.Errorf("%s on the redirect: %v (code %q), want EUNAVAILABLE err_pg_refused", code, err, boxoffice.ErrorCode(err))
		}
		if _, err := refusing.ConfirmWebhook(ctx, key, o.ID); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
			t.Errorf("%s on the webhook: %v, want EUNAVAILABLE (the PG retries)", code, err)
		}
	}
	if out, _ := env.Outcome(t, key); out != "" {
		t.Errorf("payment recorded %q while the PG refused, want nothing", out)
	}
	checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderPendingPayment, "")
	checkouttest.WantOrder(t, env.MustRedirect(t, o.ID, key, amount).Order, boxoffice.OrderConfirmed, "")
	env.CheckInvariants(t)
}
