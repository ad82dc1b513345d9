package store_test

import (
	"fmt"
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

// BenchmarkPaidOrder measures the whole paying path of an order, 16 at a
// time, each of another account and seat: the checkout (CreateOrder), the
// payment at the sandbox PG, the success redirect's confirmation, the PG's
// webhook and the order page (FindOrderByID); the holds are taken first,
// outside the timer. Besides the time it reports, per paid order, the
// store's round trips to PostgreSQL, the connections it acquired and how
// long it held them in all (the sandbox's statements, on a pool of their
// own, are not counted), for store pools of 4, 8 and 16 connections (the
// sandbox's stays at the tests' 4). Run it with a fixed count, such as
// -benchtime=300x.
func BenchmarkPaidOrder(b *testing.B) {
	for _, conns := range []int32{4, 8, 16} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) { benchmarkPaidOrder(b, conns) })
	}
}

func benchmarkPaidOrder(b *testing.B, conns int32) {
	env := checkouttest.New(b, b.N)
	trips := env.CountTrips(b, conns)
	buyers := env.HoldOneEach(b, b.N)
	before := trips.Snapshot()
	b.ResetTimer()
	env.PayAll(b, buyers, 16)
	env.SB.Wait()
	b.StopTimer()
	got := trips.Snapshot().Sub(before)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "paid/s")
	b.ReportMetric(float64(got.RoundTrips)/float64(b.N), "trips/op")
	b.ReportMetric(float64(got.Acquires)/float64(b.N), "acquires/op")
	b.ReportMetric(float64(got.Held.Microseconds())/1000/float64(b.N), "held-ms/op")
	env.CheckInvariants(b)
}
