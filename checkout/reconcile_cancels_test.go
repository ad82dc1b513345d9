package checkout_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// A refund made at the PG's dashboard whose webhook never came is found by
// the reconciler and applied once, while reconcilers of several instances
// and the webhook (late after all) report it again and again, round after
// round: a partial cancel, then the rest.
func TestService_Reconcile_PGCancels(t *testing.T) {
	t.Parallel()
	const rounds, racers = 4, 10
	env := checkouttest.New(t, rounds*4)
	ctx := context.Background()
	svc, _ := refunds(env)
	env.Orders.ReconcileCancelRecheck = 1 // every call looks every confirmed order up again

	untouched, _ := sold(env, t, env.Account(t), env.Event.R[rounds])
	for round := range rounds {
		o, key := sold(env, t, env.Account(t), env.Event.R[round], env.Event.S[round])
		sPrice := o.Items[len(o.Items)-1].Price
		for step, amount := range []int64{sPrice, o.Amount.Amount - sPrice} {
			req := boxoffice.CancelRequest{Reason: "대시보드 환불", Amount: &boxoffice.Money{Amount: amount, Currency: o.Amount.Currency}, RefundID: fmt.Sprintf("dashboard-%d", step)}
			if _, err := env.PG.Cancel(ctx, key, req); err != nil {
				t.Fatal(err)
			}
			storetest.AtOnce(2*racers, func(i int) {
				var err error
				if i%2 == 0 {
					_, err = svc.Reconcile(ctx)
				} else {
					_, err = svc.ApplyPGCancels(ctx, key, o.ID)
				}
				if err != nil {
					t.Errorf("round %d step %d: %v", round, step, err)
				}
			})
			if n := env.Count(t, `SELECT count(*) FROM refund WHERE order_id = $1 AND status = 'done' AND source = 'pg'`, o.ID); n != step+1 {
				t.Errorf("round %d step %d: %d refunds from the PG done, want %d", round, step, n, step+1)
			}
			checkRefunds(env, t, o, key)
		}
		if st := env.FindOrder(t, o.ID).Status; st != boxoffice.OrderRefunded {
			t.Errorf("round %d: order %s is %s, want REFUNDED", round, o.ID, st)
		}
	}
	if st := env.FindOrder(t, untouched.ID).Status; st != boxoffice.OrderConfirmed {
		t.Errorf("an order nobody refunded is %s, want CONFIRMED", st)
	}

	// The reconciler alone finds a cancel (no webhook at all).
	o, key := sold(env, t, env.Account(t), env.Event.S[rounds])
	if _, err := env.PG.Cancel(ctx, key, boxoffice.CancelRequest{Reason: "대시보드 환불"}); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Reconcile(ctx)
	if err != nil || res.Canceled != 1 || res.Failures != 0 {
		t.Errorf("Reconcile = %+v, %v; want one cancel found, no failure", res, err)
	}
	if st := env.FindOrder(t, o.ID).Status; st != boxoffice.OrderRefunded {
		t.Errorf("order refunded at the PG only is %s, want REFUNDED", st)
	}
	checkRefunds(env, t, o, key)
	env.CheckInvariants(t)
}
