package store_test

import (
	"context"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
)

// A payment that arrives after its order expired and its seat was blocked
// is refunded: a blocked seat is never sold (the confirmation's claim
// refuses it like a rival's hold).
func TestBlocks_LatePaymentForBlockedSeat(t *testing.T) {
	t.Parallel()
	env := newCheckoutEnv(t, 20)
	ev := env.Event
	blocks := &store.Blocks{DB: env.DB, Holds: env.Holds}
	admin := env.account(t)

	o := env.order(t, env.account(t), ev.R[0])
	key, amount := env.pay(t, o, sandbox.ScenarioWebhookNever)
	env.expire(t)
	wantOrder(t, env.findOrder(t, o.ID), boxoffice.OrderExpired, "")
	if _, err := blocks.ChangeBlocks(context.Background(), boxoffice.BlockRequest{
		EventID: ev.ID, AdminID: admin, Action: boxoffice.BlockActionBlock, Seats: []string{ev.R[0]},
	}); err != nil {
		t.Fatalf("block the expired order's seat: %v", err)
	}
	c := env.mustRedirect(t, o.ID, key, amount)
	wantOrder(t, c.Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
	if n := env.count(t, `SELECT count(*) FROM sold_seat WHERE event_id = $1 AND seat_label = $2`, ev.ID, ev.R[0]); n != 0 {
		t.Errorf("blocked seat %s sold %d times, want 0", ev.R[0], n)
	}
}
