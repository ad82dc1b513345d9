package store_test

import (
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
)

// BenchmarkOrders_Confirm measures the confirmation of paid orders (the
// success redirect: the PG's confirm and look-up at the sandbox, the claim,
// the transaction, MarkSold), 16 at a time, each order of another account
// and seat; order creation and payment at the PG are set up first, outside
// the timer. Run it with a fixed count, such as -benchtime=300x.
func BenchmarkOrders_Confirm(b *testing.B) {
	env := checkouttest.New(b, b.N)
	type paid struct {
		orderID, key string
		amount       int64
	}
	orders := make([]paid, b.N)
	for i := range orders {
		o := env.Order(b, env.Account(b), env.Event.Labels[i])
		key, amount := env.Pay(b, o, sandbox.ScenarioWebhookNever)
		orders[i] = paid{o.ID, key, amount}
	}
	work := make(chan paid)
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 16 {
		wg.Go(func() {
			for p := range work {
				if _, err := env.Redirect(p.orderID, p.key, p.amount); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for _, p := range orders {
		work <- p
	}
	close(work)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "confirms/s")
	env.CheckInvariants(b)
}
