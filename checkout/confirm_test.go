package checkout_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/redis/go-redis/v9"
)

// Each of the sandbox's scenarios, paid and redirected back: how the order,
// the payment and the PG end, once every webhook has been delivered.
func TestService_Confirm_Scenarios(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 40)
	tests := []struct {
		scenario    string
		status      boxoffice.OrderStatus
		failure     string
		outcome     boxoffice.PaymentOutcome
		pgStatus    boxoffice.PaymentStatus
		minWebhooks int // webhooks the sandbox delivers, each answered 200
	}{
		{sandbox.ScenarioDefault, boxoffice.OrderConfirmed, "", boxoffice.PaymentConfirmed, boxoffice.PaymentStatusDone, 1},
		{sandbox.ScenarioWebhookTwice, boxoffice.OrderConfirmed, "", boxoffice.PaymentConfirmed, boxoffice.PaymentStatusDone, 2},
		{sandbox.ScenarioWebhookLate, boxoffice.OrderConfirmed, "", boxoffice.PaymentConfirmed, boxoffice.PaymentStatusDone, 1},
		{sandbox.ScenarioWebhookBeforeRedirect, boxoffice.OrderConfirmed, "", boxoffice.PaymentConfirmed, boxoffice.PaymentStatusDone, 1},
		{sandbox.ScenarioWebhookNever, boxoffice.OrderConfirmed, "", boxoffice.PaymentConfirmed, boxoffice.PaymentStatusDone, 0},
		// The redirect's amount is not the order's: the PG is never asked to confirm.
		{sandbox.ScenarioTamperAmount, boxoffice.OrderFailed, boxoffice.ReasonAmountMismatch, "", boxoffice.PaymentStatusInProgress, 0},
		// Paid less (and redirected with that amount): never confirmed.
		{sandbox.ScenarioPayLess, boxoffice.OrderFailed, boxoffice.ReasonAmountMismatch, "", boxoffice.PaymentStatusInProgress, 0},
		// The card is refused at confirmation: the order stays payable.
		{sandbox.ScenarioRejectCard, boxoffice.OrderPendingPayment, boxoffice.ReasonPaymentFailed, boxoffice.PaymentRejected, boxoffice.PaymentStatusAborted, 1},
	}
	for i, tt := range tests {
		name := tt.scenario
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			o := env.Order(t, env.Account(t), env.Event.R[i], env.Event.S[i])
			key, amount := env.Pay(t, o, tt.scenario)
			c := env.MustRedirect(t, o.ID, key, amount)
			env.SB.Wait()
			got := env.FindOrder(t, o.ID)
			checkouttest.WantOrder(t, got, tt.status, tt.failure)
			if c.Order.Status != got.Status || c.Outcome != tt.outcome {
				t.Errorf("redirect's result: order %s, outcome %q; want %s, %q", c.Order.Status, c.Outcome, got.Status, tt.outcome)
			}
			if out, _ := env.Outcome(t, key); out != tt.outcome {
				t.Errorf("recorded outcome %q, want %q", out, tt.outcome)
			}
			if st := env.PGStatus(t, key); st != tt.pgStatus {
				t.Errorf("PG status %s, want %s", st, tt.pgStatus)
			}
			wantTickets := 0
			if tt.status == boxoffice.OrderConfirmed {
				wantTickets = 2
			}
			if len(got.Tickets) != wantTickets {
				t.Errorf("%d tickets, want %d", len(got.Tickets), wantTickets)
			}
			for _, tk := range got.Tickets {
				if _, ok := boxoffice.VerifyTicketCode([]byte(checkouttest.TicketSecret), tk.Code, env.Event.ID, tk.Seat); !ok {
					t.Errorf("ticket %s: code %q does not verify", tk.Seat, tk.Code)
				}
			}
			calls := env.WebhookCalls(key)
			if len(calls) < tt.minWebhooks {
				t.Errorf("%d webhooks handled, want at least %d", len(calls), tt.minWebhooks)
			}
			for _, w := range calls {
				if w.Status != http.StatusOK || w.Result.Order.Status != got.Status || w.Result.Outcome != tt.outcome {
					t.Errorf("webhook answered %d with %s/%q, want 200 with %s/%q", w.Status, w.Result.Order.Status, w.Result.Outcome, got.Status, tt.outcome)
				}
			}
			if tt.status == boxoffice.OrderConfirmed {
				if labels, _ := env.MyHolds(t, o.AccountID); len(labels) != 0 {
					t.Errorf("holds after the sale %v, want none", labels)
				}
			}
		})
	}

	t.Run("PayAgainAfterRefusal", func(t *testing.T) {
		o := env.Order(t, env.Account(t), env.Event.R[10])
		key, amount := env.Pay(t, o, sandbox.ScenarioRejectCard)
		env.MustRedirect(t, o.ID, key, amount)
		key, amount = env.Pay(t, o, sandbox.ScenarioDefault)
		c := env.MustRedirect(t, o.ID, key, amount)
		checkouttest.WantOrder(t, c.Order, boxoffice.OrderConfirmed, "")
	})
	env.CheckInvariants(t)
}

// The redirect and the webhook at the same instant, with the sandbox's own
// webhook racing them too, 100 rounds: one confirmation, one set of
// tickets, one outbox row, and every caller sees the same result.
func TestService_Confirm_RedirectAndWebhookRace(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 100)
	ctx := context.Background()
	for round := range 100 {
		o := env.Order(t, env.Account(t), env.Event.Labels[round])
		key, amount := env.Pay(t, o, sandbox.ScenarioDefault)
		results := make([]*boxoffice.Confirmation, 2)
		storetest.AtOnce(2, func(i int) {
			var err error
			if i == 0 {
				results[i], err = env.Redirect(o.ID, key, amount)
			} else {
				results[i], err = env.Checkout.ConfirmWebhook(ctx, key, o.ID)
			}
			if err != nil {
				t.Errorf("round %d, caller %d: %v", round, i, err)
			}
		})
		env.SB.Wait()
		for _, w := range env.WebhookCalls(key) {
			results = append(results, w.Result)
		}
		for i, c := range results {
			if c == nil || c.Outcome != boxoffice.PaymentConfirmed || c.Order.Status != boxoffice.OrderConfirmed ||
				!slices.Equal(checkouttest.TicketIDs(c.Order), checkouttest.TicketIDs(results[0].Order)) || len(c.Order.Tickets) != 1 {
				t.Fatalf("round %d: caller %d saw %+v, want confirmed with the same one ticket as the others", round, i, c)
			}
		}
		if n := env.Count(t, `SELECT count(*) FROM outbox WHERE payload->>'order_id' = $1`, o.ID); n != 1 {
			t.Fatalf("round %d: %d outbox rows, want 1", round, n)
		}
	}
	env.CheckInvariants(t)
}

// Hundreds of callers for one payment at once, redirects and webhooks mixed,
// on four instances (on one, a call waits for the one under way: Confirm),
// several rounds: one confirmation.
func TestService_Confirm_Storm(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	ctx := context.Background()
	instances := []*checkout.Service{env.Checkout}
	for range 3 {
		instances = append(instances, env.NewService(env.NewOrders(), env.Gateway()))
	}
	for round := range 2 {
		o := env.Order(t, env.Account(t), env.Event.Labels[round], env.Event.Labels[10+round])
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		var mu sync.Mutex
		tickets := map[string]int{}
		storetest.AtOnce(200, func(i int) {
			var c *boxoffice.Confirmation
			var err error
			svc := instances[i/2%len(instances)] // redirects and webhooks on each
			if i%2 == 0 {
				c, err = svc.Confirm(ctx, o.ID, key, &amount)
			} else {
				c, err = svc.ConfirmWebhook(ctx, key, o.ID)
			}
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
				return
			}
			mu.Lock()
			tickets[string(c.Order.Status)+" "+strings.Join(checkouttest.TicketIDs(c.Order), ",")]++
			mu.Unlock()
		})
		if len(tickets) != 1 {
			t.Fatalf("round %d: callers saw %d different results %v, want one", round, len(tickets), tickets)
		}
	}
	env.CheckInvariants(t)
}

// The same webhook ten times at once, and two webhooks (different createdAt)
// for one payment, after the PG confirmed it: one confirmation.
func TestService_ConfirmWebhook_Repeats(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 40)
	ctx := context.Background()

	t.Run("TenAtOnce", func(t *testing.T) {
		for round := range 5 {
			o := env.Order(t, env.Account(t), env.Event.R[round])
			key, _ := env.Pay(t, o, sandbox.ScenarioWebhookNever)
			p, err := env.PG.Confirm(ctx, key, o.ID, o.Amount)
			if err != nil {
				t.Fatal(err)
			}
			statuses := make([]int, 10)
			at := time.Now()
			storetest.AtOnce(len(statuses), func(i int) { statuses[i] = env.PostWebhook(t, p, at) })
			for i, st := range statuses {
				if st != http.StatusOK {
					t.Errorf("webhook %d answered %d, want 200", i, st)
				}
			}
			checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderConfirmed, "")
		}
	})

	t.Run("TwoEvents", func(t *testing.T) {
		o := env.Order(t, env.Account(t), env.Event.S[0], env.Event.S[1])
		key, _ := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		p, err := env.PG.Confirm(ctx, key, o.ID, o.Amount)
		if err != nil {
			t.Fatal(err)
		}
		storetest.AtOnce(2, func(i int) {
			if st := env.PostWebhook(t, p, time.Now().Add(time.Duration(i)*time.Minute)); st != http.StatusOK {
				t.Errorf("webhook %d answered %d, want 200", i, st)
			}
		})
		// A redelivery days later gets the same answer.
		if st := env.PostWebhook(t, p, time.Now().Add(72*time.Hour)); st != http.StatusOK {
			t.Errorf("redelivery answered %d, want 200", st)
		}
		o = env.FindOrder(t, o.ID)
		checkouttest.WantOrder(t, o, boxoffice.OrderConfirmed, "")
		if len(o.Tickets) != 2 {
			t.Errorf("%d tickets, want 2", len(o.Tickets))
		}
	})

	t.Run("Forged", func(t *testing.T) {
		o := env.Order(t, env.Account(t), env.Event.S[5])
		key, _ := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		for _, p := range []*boxoffice.Payment{
			{PaymentKey: "tsbx-no-such-payment", OrderID: o.ID},                         // unknown to the PG
			{PaymentKey: key, OrderID: env.Order(t, env.Account(t), env.Event.S[6]).ID}, // another order's
		} {
			_, err := env.Checkout.ConfirmWebhook(ctx, p.PaymentKey, p.OrderID)
			storetest.WantError(t, err, boxoffice.EUNAUTHORIZED)
		}
		checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderPendingPayment, "")
		if st := env.PGStatus(t, key); st != boxoffice.PaymentStatusInProgress {
			t.Errorf("PG status %s after forged webhooks, want IN_PROGRESS", st)
		}
	})

	// A webhook of a payment recorded confirmed answers its result with no
	// look-up, but only for the order it was recorded for: one naming
	// another order is looked up and refused, and changes nothing.
	t.Run("ForgedOnAConfirmedPayment", func(t *testing.T) {
		paid := env.Order(t, env.Account(t), env.Event.S[7])
		key, amount := env.Pay(t, paid, sandbox.ScenarioWebhookNever)
		env.MustRedirect(t, paid.ID, key, amount)
		other := env.Order(t, env.Account(t), env.Event.S[8])
		pg := env.Gateway()
		lookUps := pg.LookUps.Load()
		if _, err := env.Checkout.ConfirmWebhook(ctx, key, paid.ID); err != nil {
			t.Fatalf("the paid order's webhook: %v", err)
		}
		if n := pg.LookUps.Load() - lookUps; n != 0 {
			t.Errorf("the paid order's webhook looked the payment up %d times, want 0", n)
		}
		_, err := env.Checkout.ConfirmWebhook(ctx, key, other.ID)
		storetest.WantError(t, err, boxoffice.EUNAUTHORIZED)
		if n := pg.LookUps.Load() - lookUps; n != 1 {
			t.Errorf("the other order's webhook: %d look-ups, want 1", n)
		}
		checkouttest.WantOrder(t, env.FindOrder(t, other.ID), boxoffice.OrderPendingPayment, "")
		checkouttest.WantOrder(t, env.FindOrder(t, paid.ID), boxoffice.OrderConfirmed, "")
	})
	env.CheckInvariants(t)
}

// A stranger sends a success redirect that names another order of the same
// amount with the buyer's payment key, before the buyer's own redirect: the
// forgery is refused and changes nothing, and the buyer's redirect confirms
// the order exactly once. The PG's refusal of the wrong-order confirm must
// never be replayed to the right order's (the Idempotency-Key names the
// order), nor be recorded against either order.
func TestService_Confirm_OtherOrdersRedirectFirst(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	for round := range 3 {
		buyer := env.Order(t, env.Account(t), env.Event.R[2*round])
		stranger := env.Order(t, env.Account(t), env.Event.R[2*round+1])
		if buyer.Amount != stranger.Amount {
			t.Fatalf("orders of %s and %s: the test needs one amount", buyer.Amount, stranger.Amount)
		}
		key, amount := env.Pay(t, buyer, sandbox.ScenarioWebhookNever)

		_, err := env.Redirect(stranger.ID, key, amount)
		storetest.WantError(t, err, boxoffice.EBADREQUEST)
		checkouttest.WantOrder(t, env.FindOrder(t, stranger.ID), boxoffice.OrderPendingPayment, "")
		checkouttest.WantOrder(t, env.FindOrder(t, buyer.ID), boxoffice.OrderPendingPayment, "")
		if out, _ := env.Outcome(t, key); out != "" {
			t.Fatalf("the forged redirect recorded the payment as %q, want nothing recorded", out)
		}
		if st := env.PGStatus(t, key); st != boxoffice.PaymentStatusInProgress {
			t.Fatalf("PG status %s after the forged redirect, want IN_PROGRESS", st)
		}

		c := env.MustRedirect(t, buyer.ID, key, amount)
		checkouttest.WantOrder(t, c.Order, boxoffice.OrderConfirmed, "")
		if c.Outcome != boxoffice.PaymentConfirmed || len(c.Order.Tickets) != 1 {
			t.Errorf("the buyer's redirect: outcome %q with %d tickets, want confirmed with 1", c.Outcome, len(c.Order.Tickets))
		}
		if n := env.Count(t, `SELECT count(*) FROM payment WHERE order_id = $1`, buyer.ID); n != 1 {
			t.Errorf("%d payments recorded for the buyer's order, want 1", n)
		}
		checkouttest.WantOrder(t, env.FindOrder(t, stranger.ID), boxoffice.OrderPendingPayment, "")
	}
	env.CheckInvariants(t)
}

// The process handling the redirect dies after the PG confirmed and before
// its transaction: the webhook, or the reconciler, finishes the order.
func TestService_Confirm_CrashAfterPGConfirm(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	ctx := context.Background()
	tests := []struct {
		name     string
		scenario string
		finish   func(t *testing.T)
	}{
		{"Webhook", sandbox.ScenarioDefault, func(t *testing.T) { env.SB.Wait() }},
		{"Reconciler", sandbox.ScenarioWebhookNever, func(t *testing.T) {
			env.Clock.Advance(store.DefaultReconcileGrace)
			res, err := env.Checkout.Reconcile(ctx)
			if err != nil || res.Found < 1 || res.Failures != 0 {
				t.Fatalf("Reconcile = %+v, %v; want the payment found and settled", res, err)
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := env.Order(t, env.Account(t), env.Event.R[i])
			key, _ := env.Pay(t, o, tt.scenario)
			if _, err := env.PG.Confirm(ctx, key, o.ID, o.Amount); err != nil { // the money moved; then the crash
				t.Fatal(err)
			}
			if tt.scenario == sandbox.ScenarioWebhookNever {
				// Nothing but the reconciler can finish it. (The webhook of
				// the other case may have done so already.)
				checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderPendingPayment, "")
			}
			tt.finish(t)
			got := env.FindOrder(t, o.ID)
			checkouttest.WantOrder(t, got, boxoffice.OrderConfirmed, "")
			if out, _ := env.Outcome(t, key); out != boxoffice.PaymentConfirmed || len(got.Tickets) != 1 {
				t.Errorf("outcome %q with %d tickets, want confirmed with 1", out, len(got.Tickets))
			}
		})
	}
	env.CheckInvariants(t)
}

// A payment that arrives after the order expired.
func TestService_Confirm_Late(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	ctx := context.Background()
	ev := env.Event

	t.Run("SeatsFree", func(t *testing.T) {
		o := env.Order(t, env.Account(t), ev.R[0], ev.R[1])
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		env.Expire(t)
		checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderExpired, "")
		c := env.MustRedirect(t, o.ID, key, amount)
		checkouttest.WantOrder(t, c.Order, boxoffice.OrderConfirmed, "")
		if c.Outcome != boxoffice.PaymentConfirmed || len(c.Order.Tickets) != 2 {
			t.Errorf("outcome %q with %d tickets, want confirmed with 2", c.Outcome, len(c.Order.Tickets))
		}
	})

	t.Run("SeatSoldMeanwhile", func(t *testing.T) {
		late := env.Order(t, env.Account(t), ev.R[2], ev.R[3])
		key, amount := env.Pay(t, late, sandbox.ScenarioWebhookNever)
		env.Expire(t)
		other := env.Order(t, env.Account(t), ev.R[3])
		k2, a2 := env.Pay(t, other, sandbox.ScenarioDefault)
		before := env.MustRedirect(t, other.ID, k2, a2).Order

		c := env.MustRedirect(t, late.ID, key, amount)
		checkouttest.WantOrder(t, c.Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
		if c.Outcome != boxoffice.PaymentRefunded || env.PGStatus(t, key) != boxoffice.PaymentStatusCanceled {
			t.Errorf("outcome %q, PG %s; want refunded, CANCELED", c.Outcome, env.PGStatus(t, key))
		}
		after := env.FindOrder(t, other.ID)
		checkouttest.WantOrder(t, after, boxoffice.OrderConfirmed, "")
		if !slices.Equal(checkouttest.TicketIDs(after), checkouttest.TicketIDs(before)) || env.PGStatus(t, k2) != boxoffice.PaymentStatusDone {
			t.Errorf("the other buyer's order changed: tickets %v, were %v", checkouttest.TicketIDs(after), checkouttest.TicketIDs(before))
		}
		// The free seat of the refunded order was not sold either.
		if n := env.Count(t, `SELECT count(*) FROM sold_seat WHERE event_id = $1 AND seat_label = $2`, ev.ID, ev.R[2]); n != 0 {
			t.Errorf("seat %s sold %d times, want 0", ev.R[2], n)
		}
		// Webhooks and repeats later keep the result.
		if again := env.MustRedirect(t, late.ID, key, amount); again.Outcome != boxoffice.PaymentRefunded ||
			again.Order.Status != boxoffice.OrderRefunded {
			t.Errorf("repeat: %s/%q, want REFUNDED/refunded", again.Order.Status, again.Outcome)
		}
	})

	// Redis lost the sale of a seat (its sold-seat cache no longer lists
	// it): the claim passes, and PostgreSQL's unique keys, the final guard,
	// refuse the second sale of the seat, which is refunded.
	t.Run("SeatSoldBehindRedis", func(t *testing.T) {
		late := env.Order(t, env.Account(t), ev.R[4], ev.R[5])
		key, amount := env.Pay(t, late, sandbox.ScenarioWebhookNever)
		env.Expire(t)
		other := env.Order(t, env.Account(t), ev.R[5])
		k2, a2 := env.Pay(t, other, sandbox.ScenarioDefault)
		env.MustRedirect(t, other.ID, k2, a2)
		if err := env.R.Client.SRem(ctx, env.R.Key("sold:{%d}", ev.ID), ev.R[5]).Err(); err != nil {
			t.Fatalf("Redis loses the sale of %s: %v", ev.R[5], err)
		}
		c := env.MustRedirect(t, late.ID, key, amount)
		checkouttest.WantOrder(t, c.Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
		if n := env.Count(t, `SELECT count(*) FROM ticket WHERE event_id = $1 AND seat_label = $2`, ev.ID, ev.R[5]); n != 1 {
			t.Errorf("seat %s has %d tickets, want 1", ev.R[5], n)
		}
	})

	t.Run("SeatHeldByAnother", func(t *testing.T) {
		late := env.Order(t, env.Account(t), ev.S[0])
		key, amount := env.Pay(t, late, sandbox.ScenarioWebhookNever)
		env.Expire(t)
		holder := env.Account(t)
		req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: holder, Limit: checkouttest.Limit, TTL: checkouttest.HoldTTL}
		if _, err := env.Holds.Hold(ctx, req, []string{ev.S[0]}); err != nil {
			t.Fatal(err)
		}
		c := env.MustRedirect(t, late.ID, key, amount)
		checkouttest.WantOrder(t, c.Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
		if labels, _ := env.MyHolds(t, holder); !slices.Equal(labels, []string{ev.S[0]}) {
			t.Errorf("the holder's holds %v, want %v kept", labels, []string{ev.S[0]})
		}
	})
	env.CheckInvariants(t)
}

// A payment in time for an order whose seat the buyer cannot release (it is
// in the order) but whose hold Redis lost meanwhile, and another account
// then held: the seat is not taken from the other account; the payment is
// refunded.
func TestService_Confirm_LostSeatHeldByAnother(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 6)
	ctx := context.Background()
	ev := env.Event
	buyer := env.Account(t)
	o := env.Order(t, buyer, ev.R[0], ev.R[1])
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	if _, err := env.Holds.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: buyer}, ev.R[0]); boxoffice.ErrorCode(err) != boxoffice.ESEATINORDER {
		t.Fatalf("the buyer releases %s of its order: %v, want %s", ev.R[0], err, boxoffice.ESEATINORDER)
	}
	_, err := env.R.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, env.R.Key("seat:lock:{%d}:%s", ev.ID, ev.R[0]), env.R.Key("seat:order:{%d}:%s", ev.ID, ev.R[0]))
		p.ZRem(ctx, env.R.Key("hold:{%d}:%d", ev.ID, buyer), ev.R[0])
		p.ZRem(ctx, env.R.Key("held:{%d}", ev.ID), ev.R[0])
		p.HDel(ctx, env.R.Key("holder:{%d}", ev.ID), ev.R[0])
		return nil
	})
	if err != nil {
		t.Fatalf("Redis loses the hold of %s: %v", ev.R[0], err)
	}
	holder := env.Account(t)
	req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: holder, Limit: checkouttest.Limit, TTL: checkouttest.HoldTTL}
	if _, err := env.Holds.Hold(ctx, req, []string{ev.R[0]}); err != nil {
		t.Fatal(err)
	}
	c := env.MustRedirect(t, o.ID, key, amount)
	checkouttest.WantOrder(t, c.Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
	if labels, _ := env.MyHolds(t, holder); !slices.Equal(labels, []string{ev.R[0]}) {
		t.Errorf("the other account's holds %v, want %v kept", labels, []string{ev.R[0]})
	}
	if n := env.Count(t, `SELECT count(*) FROM sold_seat WHERE event_id = $1`, ev.ID); n != 0 {
		t.Errorf("%d seats sold, want 0", n)
	}
	env.CheckInvariants(t)
}

// Late payments of several accounts for the same seat, all at once, many
// rounds: the seat is sold once, the other payments are refunded.
func TestService_Confirm_LateSeatRace(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	const buyers = 10
	for round := range 4 {
		seat := env.Event.Labels[round]
		type paid struct {
			order  *boxoffice.Order
			key    string
			amount int64
		}
		var payments []paid
		for range buyers {
			o := env.Order(t, env.Account(t), seat)
			key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
			env.Expire(t)
			payments = append(payments, paid{o, key, amount})
		}
		storetest.AtOnce(2*buyers, func(i int) { // each payment's redirect and webhook
			p := payments[i%buyers]
			var err error
			if i < buyers {
				_, err = env.Redirect(p.order.ID, p.key, p.amount)
			} else {
				_, err = env.Checkout.ConfirmWebhook(context.Background(), p.key, p.order.ID)
			}
			if err != nil {
				t.Errorf("confirm %s: %v", p.key, err)
			}
		})
		confirmed := 0
		for _, p := range payments {
			switch o := env.FindOrder(t, p.order.ID); o.Status {
			case boxoffice.OrderConfirmed:
				confirmed++
			case boxoffice.OrderRefunded:
				if env.PGStatus(t, p.key) != boxoffice.PaymentStatusCanceled {
					t.Errorf("refunded order %s: PG %s, want CANCELED", o.ID, env.PGStatus(t, p.key))
				}
			default:
				t.Errorf("order %s ended %s, want CONFIRMED or REFUNDED", o.ID, o.Status)
			}
		}
		if confirmed != 1 {
			t.Fatalf("round %d: %d orders confirmed for seat %s, want 1", round, confirmed, seat)
		}
	}
	env.CheckInvariants(t)
}

// Two payments for one order (two checkout tabs): one confirmation; the
// other is never confirmed at the PG, or is refunded.
func TestService_Confirm_TwoPayments(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 40)

	t.Run("OneAfterTheOther", func(t *testing.T) {
		o := env.Order(t, env.Account(t), env.Event.R[0])
		k1, a1 := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		k2, a2 := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		env.MustRedirect(t, o.ID, k1, a1)
		c := env.MustRedirect(t, o.ID, k2, a2)
		checkouttest.WantOrder(t, c.Order, boxoffice.OrderConfirmed, "")
		if c.Outcome != boxoffice.PaymentRejected || c.Reason != boxoffice.ReasonAlreadyPaid {
			t.Errorf("second payment: %q (%s), want rejected (already_paid)", c.Outcome, c.Reason)
		}
		if st := env.PGStatus(t, k2); st != boxoffice.PaymentStatusInProgress {
			t.Errorf("second payment at the PG: %s, want IN_PROGRESS (never confirmed)", st)
		}
	})

	// The second payment was looked up (not confirmed yet: rejected) while a
	// confirm of it was still under way at the PG, which then lands: its
	// webhook turns the rejection into a refund.
	t.Run("ConfirmedAfterRejection", func(t *testing.T) {
		o := env.Order(t, env.Account(t), env.Event.S[0])
		k1, a1 := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		k2, a2 := env.Pay(t, o, sandbox.ScenarioDefault)
		env.MustRedirect(t, o.ID, k1, a1)
		if c := env.MustRedirect(t, o.ID, k2, a2); c.Outcome != boxoffice.PaymentRejected {
			t.Fatalf("second payment: %q, want rejected", c.Outcome)
		}
		if _, err := env.PG.Confirm(context.Background(), k2, o.ID, o.Amount); err != nil { // the confirm under way lands
			t.Fatal(err)
		}
		env.SB.Wait()
		if out, reason := env.Outcome(t, k2); out != boxoffice.PaymentRefunded || reason != boxoffice.ReasonAlreadyPaid ||
			env.PGStatus(t, k2) != boxoffice.PaymentStatusCanceled {
			t.Errorf("second payment: %q (%s), PG %s; want refunded (already_paid), CANCELED", out, reason, env.PGStatus(t, k2))
		}
		checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderConfirmed, "")
	})

	t.Run("AtOnce", func(t *testing.T) {
		for round := range 15 {
			o := env.Order(t, env.Account(t), env.Event.Labels[1+round])
			k1, a1 := env.Pay(t, o, sandbox.ScenarioDefault)
			k2, a2 := env.Pay(t, o, sandbox.ScenarioDefault)
			storetest.AtOnce(4, func(i int) {
				key, amount := k1, a1
				if i%2 == 1 {
					key, amount = k2, a2
				}
				if _, err := env.Redirect(o.ID, key, amount); err != nil {
					t.Errorf("redirect: %v", err)
				}
			})
			env.SB.Wait()
			checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderConfirmed, "")
			kept := 0
			for _, key := range []string{k1, k2} {
				out, _ := env.Outcome(t, key)
				switch st := env.PGStatus(t, key); {
				case out == boxoffice.PaymentConfirmed && st == boxoffice.PaymentStatusDone:
					kept++
				case out == boxoffice.PaymentRefunded && st == boxoffice.PaymentStatusCanceled,
					out == boxoffice.PaymentRejected && st == boxoffice.PaymentStatusInProgress:
				default:
					t.Errorf("round %d: payment %s: outcome %q, PG %s", round, key, out, st)
				}
			}
			if kept != 1 {
				t.Fatalf("round %d: %d payments kept, want 1", round, kept)
			}
		}
	})
	env.CheckInvariants(t)
}

// The per-account limit at the database: an account that bought 3 seats
// (limit 5, checkouttest.Limit) holds 3 more on a Redis copy that lost its
// purchase (as after a restore from an older snapshot), checks out, and
// pays the new order while the webhook of the same payment arrives: the
// confirmation transaction refuses it (refunded, limit_exceeded), once.
func TestService_Confirm_LimitAtDatabase(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 120)
	ctx := context.Background()
	for round := range 10 {
		acct := env.Account(t)
		seats := env.Event.Labels[round*6 : round*6+6]
		first := env.Order(t, acct, seats[:3]...)
		k1, a1 := env.Pay(t, first, sandbox.ScenarioWebhookNever)
		env.MustRedirect(t, first.ID, k1, a1)
		if err := env.R.Client.HDel(ctx, env.R.Key("bought:{%d}", env.Event.ID), strconv.FormatInt(acct, 10)).Err(); err != nil {
			t.Fatal(err)
		}
		second := env.Order(t, acct, seats[3:]...)
		k2, a2 := env.Pay(t, second, sandbox.ScenarioWebhookNever)
		p, err := env.PG.GetPayment(ctx, k2)
		if err != nil {
			t.Fatal(err)
		}
		storetest.AtOnce(2, func(i int) {
			if i == 0 {
				if _, err := env.Redirect(second.ID, k2, a2); err != nil {
					t.Errorf("redirect: %v", err)
				}
			} else if status := env.PostWebhook(t, p, time.Now()); status != http.StatusOK {
				t.Errorf("webhook: status %d", status)
			}
		})
		checkouttest.WantOrder(t, env.FindOrder(t, first.ID), boxoffice.OrderConfirmed, "")
		checkouttest.WantOrder(t, env.FindOrder(t, second.ID), boxoffice.OrderRefunded, boxoffice.ReasonLimitExceeded)
		if n := env.Count(t, `SELECT tickets FROM purchase_count WHERE event_id = $1 AND account_id = $2`, env.Event.ID, acct); n != 3 {
			t.Errorf("round %d: purchase_count %d, want 3", round, n)
		}
	}
	env.CheckInvariants(t)
}

// The reconciler finds payments the PG has and we never heard of.
func TestService_Reconcile(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 20)
	ctx := context.Background()
	ev := env.Event

	// Authenticated, but the buyer's redirect never came.
	lost := env.Order(t, env.Account(t), ev.R[0])
	lostKey, _ := env.Pay(t, lost, sandbox.ScenarioWebhookNever)
	// Paid less, redirect lost.
	less := env.Order(t, env.Account(t), ev.R[1])
	lessKey, _ := env.Pay(t, less, sandbox.ScenarioPayLess)
	// Never paid.
	unpaid := env.Order(t, env.Account(t), ev.R[2])
	// Too young: the redirect may still come.
	env.Clock.Advance(store.DefaultReconcileGrace)
	young := env.Order(t, env.Account(t), ev.R[3])
	youngKey, _ := env.Pay(t, young, sandbox.ScenarioWebhookNever)

	res, err := env.Checkout.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Checked != 3 || res.Found != 2 || res.Failures != 0 {
		t.Errorf("Reconcile = %+v, want 3 checked, 2 found, no failures", res)
	}
	checkouttest.WantOrder(t, env.FindOrder(t, lost.ID), boxoffice.OrderConfirmed, "")
	checkouttest.WantOrder(t, env.FindOrder(t, less.ID), boxoffice.OrderFailed, boxoffice.ReasonAmountMismatch)
	checkouttest.WantOrder(t, env.FindOrder(t, unpaid.ID), boxoffice.OrderPendingPayment, "")
	checkouttest.WantOrder(t, env.FindOrder(t, young.ID), boxoffice.OrderPendingPayment, "")
	if env.PGStatus(t, lostKey) != boxoffice.PaymentStatusDone || env.PGStatus(t, lessKey) != boxoffice.PaymentStatusInProgress ||
		env.PGStatus(t, youngKey) != boxoffice.PaymentStatusInProgress {
		t.Errorf("PG statuses %s, %s, %s; want DONE, IN_PROGRESS, IN_PROGRESS",
			env.PGStatus(t, lostKey), env.PGStatus(t, lessKey), env.PGStatus(t, youngKey))
	}

	// An order just asked about is not asked again before the recheck.
	if res, _ := env.Checkout.Reconcile(ctx); res.Checked != 0 {
		t.Errorf("second Reconcile checked %d orders, want 0", res.Checked)
	}
	env.Clock.Advance(store.DefaultReconcileRecheck)
	if res, _ := env.Checkout.Reconcile(ctx); res.Checked != 2 || res.Found != 1 {
		t.Errorf("Reconcile after the recheck interval = %+v, want unpaid and young checked, young found", res)
	}
	checkouttest.WantOrder(t, env.FindOrder(t, young.ID), boxoffice.OrderConfirmed, "")
	// Long expired orders are left alone.
	env.Clock.Advance(store.DefaultReconcileLookback + boxoffice.DefaultPaymentWindow)
	if res, _ := env.Checkout.Reconcile(ctx); res.Checked != 0 {
		t.Errorf("Reconcile of long expired orders checked %d, want 0", res.Checked)
	}
	env.CheckInvariants(t)
}
