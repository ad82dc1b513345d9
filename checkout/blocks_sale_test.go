package checkout_test

import (
	"context"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
)

// A payment that arrives after its order expired and its seat was blocked
// is refunded: a blocked seat is never sold (the confirmation's claim
// refuses it like a rival's hold).
func TestService_LatePaymentForBlockedSeat(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	ev := env.Event
	blocks := &store.Blocks{DB: env.DB, Holds: env.Holds}
	admin := env.Account(t)

	o := env.Order(t, env.Account(t), ev.R[0])
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	env.Expire(t)
	checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderExpired, "")
	if _, err := blocks.ChangeBlocks(context.Background(), boxoffice.BlockRequest{
		EventID: ev.ID, AdminID: admin, Action: boxoffice.BlockActionBlock, Seats: []string{ev.R[0]},
	}); err != nil {
		t.Fatalf("block the expired order's seat: %v", err)
	}
	c := env.MustRedirect(t, o.ID, key, amount)
	checkouttest.WantOrder(t, c.Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
	if n := env.Count(t, `SELECT count(*) FROM sold_seat WHERE event_id = $1 AND seat_label = $2`, ev.ID, ev.R[0]); n != 0 {
		t.Errorf("blocked seat %s sold %d times, want 0", ev.R[0], n)
	}
}
