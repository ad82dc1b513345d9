package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/redis/go-redis/v9"
)

// lockWatch is a go-redis hook that, for every command while on, asks
// PostgreSQL whether a transaction of the test's database holds a
// transaction id (it wrote a row or locked one) and records the command if
// so. Only meaningful while one confirmation runs at a time.
type lockWatch struct {
	env        *checkouttest.Env
	on         atomic.Bool
	mu         sync.Mutex
	violations []string
}

func (w *lockWatch) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *lockWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		w.check(cmd.Name())
		return next(ctx, cmd)
	}
}

func (w *lockWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		w.check("pipeline")
		return next(ctx, cmds)
	}
}

func (w *lockWatch) check(name string) {
	if !w.on.Load() {
		return
	}
	var n int
	err := w.env.DB.Pool.QueryRow(context.Background(), `
		SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE a.datname = current_database() AND l.pid <> pg_backend_pid()
		  AND l.locktype = 'transactionid' AND l.granted`).Scan(&n)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.violations = append(w.violations, fmt.Sprintf("%s: %v", name, err))
	} else if n > 0 {
		w.violations = append(w.violations, fmt.Sprintf("%s while %d transaction(s) held locks", name, n))
	}
}

// No confirmation sends a Redis command while one of its PostgreSQL
// transactions holds row locks: a sale, a repeat of it, a second payment of
// a paid order, and a payment whose seat another account holds (the claim's
// refusal), each confirmed alone so that the only transaction is its own.
func TestOrders_Confirm_NoRedisWhileLocked(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 8)
	ctx := context.Background()
	ev := env.Event
	watch := &lockWatch{env: env}
	env.R.Client.AddHook(watch)

	buyer := env.Account(t)
	o := env.Order(t, buyer, ev.R[0], ev.R[1])
	k1, a1 := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	k2, a2 := env.Pay(t, o, sandbox.ScenarioWebhookNever)

	other := env.Account(t)
	o2 := env.Order(t, other, ev.S[0])
	k3, a3 := env.Pay(t, o2, sandbox.ScenarioWebhookNever)
	if err := store.EndHold(ctx, env.Holds, ev.ID, other, ev.S[0]); err != nil {
		t.Fatal(err)
	}
	rival := env.Account(t)
	req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: rival, Limit: limit, TTL: holdTTL}
	if _, err := env.Holds.Hold(ctx, req, []string{ev.S[0]}); err != nil {
		t.Fatal(err)
	}

	watch.on.Store(true)
	checkouttest.WantOrder(t, env.MustRedirect(t, o.ID, k1, a1).Order, boxoffice.OrderConfirmed, "")
	checkouttest.WantOrder(t, env.MustRedirect(t, o.ID, k1, a1).Order, boxoffice.OrderConfirmed, "")
	if c := env.MustRedirect(t, o.ID, k2, a2); c.Reason != boxoffice.ReasonAlreadyPaid {
		t.Errorf("second payment: %q (%s), want already_paid", c.Outcome, c.Reason)
	}
	checkouttest.WantOrder(t, env.MustRedirect(t, o2.ID, k3, a3).Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
	watch.on.Store(false)

	watch.mu.Lock()
	defer watch.mu.Unlock()
	if len(watch.violations) > 0 {
		t.Errorf("Redis commands sent while a transaction held locks: %v", watch.violations)
	}
	env.CheckInvariants(t)
}

// slowLookUp is a PG whose look-ups, once answered, wait until release is
// closed, so that a confirmation can be held between the PG's answer and its
// claim.
type slowLookUp struct {
	*toss.Client
	entered, release chan struct{}
}

func (g *slowLookUp) GetPayment(ctx context.Context, paymentKey string) (*boxoffice.Payment, error) {
	p, err := g.Client.GetPayment(ctx, paymentKey)
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.release
	return p, err
}

// A repeat of a confirmation that finds nothing recorded, asks the PG, and
// claims the seats only after the first confirmation settled the payment:
// after a sale the buyer is left holding nothing and no rival can hold the
// seats; after a refund (the seat was held by another account) the seats
// the repeat's claim took are free again at once, not kept by the claim for
// minutes.
func TestOrders_Confirm_RepeatClaimsAfterSettling(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 8)
	ctx := context.Background()
	ev := env.Event
	hold := func(t *testing.T, acct int64, label string) bool {
		req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: acct, Limit: limit, TTL: holdTTL}
		res, err := env.Holds.Hold(ctx, req, []string{label})
		return err == nil && len(res.Held) == 1
	}
	// lateRepeat starts a confirmation of the payment that waits after its
	// look-up at the PG found the payment DONE and nothing recorded; the
	// returned function lets it go on and waits for it.
	lateRepeat := func(t *testing.T, o *boxoffice.Order, key string) func() *boxoffice.Confirmation {
		slow := &slowLookUp{Client: env.PG, entered: make(chan struct{}, 1), release: make(chan struct{})}
		done := make(chan *boxoffice.Confirmation, 1)
		go func() {
			c, err := env.NewService(env.Orders, slow).Confirm(ctx, o.ID, key, nil)
			if err != nil {
				t.Errorf("late repeat: %v", err)
			}
			done <- c
		}()
		<-slow.entered
		return func() *boxoffice.Confirmation {
			close(slow.release)
			return <-done
		}
	}

	t.Run("AfterASale", func(t *testing.T) {
		buyer := env.Account(t)
		o := env.Order(t, buyer, ev.R[0], ev.R[1])
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		finish := lateRepeat(t, o, key)
		first := env.MustRedirect(t, o.ID, key, amount)
		checkouttest.WantOrder(t, first.Order, boxoffice.OrderConfirmed, "")
		if c := finish(); c != nil && !slices.Equal(checkouttest.TicketIDs(c.Order), checkouttest.TicketIDs(first.Order)) {
			t.Errorf("late repeat saw tickets %v, want %v", checkouttest.TicketIDs(c.Order), checkouttest.TicketIDs(first.Order))
		}
		if labels, _ := env.MyHolds(t, buyer); len(labels) != 0 {
			t.Errorf("the buyer still holds %v after the sale, want nothing", labels)
		}
		if hold(t, env.Account(t), ev.R[0]) {
			t.Errorf("a rival holds sold seat %s", ev.R[0])
		}
	})

	t.Run("AfterARefund", func(t *testing.T) {
		buyer := env.Account(t)
		o := env.Order(t, buyer, ev.S[0])
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		if err := store.EndHold(ctx, env.Holds, ev.ID, buyer, ev.S[0]); err != nil {
			t.Fatal(err)
		}
		rival := env.Account(t)
		if !hold(t, rival, ev.S[0]) {
			t.Fatalf("the rival could not hold %s", ev.S[0])
		}
		finish := lateRepeat(t, o, key)
		checkouttest.WantOrder(t, env.MustRedirect(t, o.ID, key, amount).Order, boxoffice.OrderRefunded, boxoffice.ReasonSeatTaken)
		if _, err := env.Holds.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: rival}, ev.S[0]); err != nil {
			t.Fatal(err)
		}
		finish() // claims the seat the rival let go, finds the payment refunded
		if labels, _ := env.MyHolds(t, buyer); len(labels) != 0 {
			t.Errorf("the buyer holds %v after the refund, want nothing", labels)
		}
		if !hold(t, env.Account(t), ev.S[0]) {
			t.Errorf("seat %s is not free after the refund: the late repeat's claim kept it", ev.S[0])
		}
	})
	env.CheckInvariants(t)
}

// Many rounds of one payment confirmed by a hundred callers at once
// (redirects and webhooks), while rival accounts try to hold the order's
// seats the whole time: one sale, no rival ever holds a seat being sold
// (the buyer's holds, then the claim, then the sold-seat set keep them), and
// the buyer is left holding nothing.
func TestOrders_Confirm_StormAgainstRivals(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 40)
	ctx := context.Background()
	ev := env.Event
	rivals := make([]int64, 8)
	for i := range rivals {
		rivals[i] = env.Account(t)
	}
	for round := range 8 {
		buyer := env.Account(t)
		seats := []string{ev.Labels[2*round], ev.Labels[2*round+1]}
		o := env.Order(t, buyer, seats...)
		key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		var rivalHeld atomic.Int64
		storetest.AtOnce(100+len(rivals), func(i int) {
			if i >= 100 {
				req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: rivals[i-100], Limit: limit, TTL: holdTTL}
				for range 5 {
					if res, err := env.Holds.Hold(ctx, req, seats[i%2:i%2+1]); err == nil && len(res.Held) > 0 {
						rivalHeld.Add(1)
					}
				}
				return
			}
			var err error
			if i%2 == 0 {
				_, err = env.Redirect(o.ID, key, amount)
			} else {
				_, err = env.Checkout.ConfirmWebhook(ctx, key, o.ID)
			}
			if err != nil {
				t.Errorf("round %d caller %d: %v", round, i, err)
			}
		})
		if n := rivalHeld.Load(); n > 0 {
			t.Errorf("round %d: rivals held the order's seats %d times", round, n)
		}
		checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderConfirmed, "")
		if labels, _ := env.MyHolds(t, buyer); len(labels) != 0 {
			t.Errorf("round %d: the buyer still holds %v after the sale", round, labels)
		}
	}
	env.CheckInvariants(t)
}

// The payment's record is written once, under the payment's advisory lock,
// by whichever of ConfirmPayment, RecordUnconfirmed and RecordUnsold takes
// the lock first: 200 calls at once for one DONE payment, over many rounds,
// none fails (no unique violation from a record made meanwhile), the
// payment has one row, and the order and its seats agree with it. A
// confirmation first sells and stays confirmed; a rejection first leaves
// the order unsold and turns into refund_pending when a confirmation comes
// after it; an unsold record first fails the order.
func TestOrders_Confirm_StormAgainstRecords(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 40)
	ctx := context.Background()
	ev := env.Event
	for round := range 12 {
		buyer := env.Account(t)
		seats := []string{ev.Labels[2*round], ev.Labels[2*round+1]}
		o := env.Order(t, buyer, seats...)
		key, _ := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		p, err := env.PG.Confirm(ctx, key, o.ID, o.Amount)
		if err != nil {
			t.Fatal(err)
		}
		storetest.AtOnce(200, func(i int) {
			var err error
			switch {
			case round%3 == 0 && i == 0, round%3 != 0 && i%4 != 0:
				_, err = env.Orders.ConfirmPayment(ctx, o, p)
			case round%3 == 1 && i%8 == 0:
				_, err = env.Orders.RecordUnsold(ctx, o, p, boxoffice.ReasonSeatTaken, "attack")
			default:
				_, err = env.Orders.RecordUnconfirmed(ctx, o, p, boxoffice.PaymentRejected, boxoffice.ReasonPaymentFailed, "attack", false)
			}
			if err != nil {
				t.Errorf("round %d caller %d: %v", round, i, err)
			}
		})
		if n := env.Count(t, `SELECT count(*) FROM payment WHERE payment_key = $1`, key); n != 1 {
			t.Fatalf("round %d: %d rows of payment %s, want 1", round, n, key)
		}
		outcome, _ := env.Outcome(t, key)
		got := env.FindOrder(t, o.ID)
		sold := env.Count(t, `SELECT count(*) FROM sold_seat WHERE order_id = $1`, o.ID)
		switch outcome {
		case boxoffice.PaymentConfirmed:
			checkouttest.WantOrder(t, got, boxoffice.OrderConfirmed, "")
			if sold != len(seats) {
				t.Errorf("round %d: confirmed, %d seats sold, want %d", round, sold, len(seats))
			}
		case boxoffice.PaymentRefundPending:
			// a record that sold nothing came first, and every confirmation
			// after it turned a rejection into a refund
			if got.Status == boxoffice.OrderConfirmed || sold != 0 {
				t.Errorf("round %d: payment %s, order %s with %d seats sold", round, outcome, got.Status, sold)
			}
		default:
			// every round confirms at least once, so a rejection cannot be
			// the last word on a DONE payment
			t.Errorf("round %d: payment recorded %q, want confirmed or refund_pending", round, outcome)
		}
	}
	env.CheckInvariants(t)
}

// soldAndHeldScript returns the first of ARGV (labels) that is in KEYS[1]
// (sold:{e}) while its seat:lock key (KEYS[2..], in ARGV's order) exists,
// or false: one atomic look at the copy, so that a seat caught is one that
// was sold and held at the same moment.
var soldAndHeldScript = redis.NewScript(`
for i = 2, #KEYS do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i - 1]) == 1 and redis.call('EXISTS', KEYS[i]) == 1 then
    return ARGV[i - 1]
  end
end
return false`)

// Once a sale is marked in Redis (MarkSold: the seats join sold:{e} and
// their hold keys go), no seat of it has a hold key again: many rounds of
// one payment confirmed over and over by a hundred callers that all read
// the order before it was paid (so that each claims the seats, as a
// webhook or redirect that read the order early does on another
// instance), while watchers look at the seats the whole time, each look
// one script. A claim that came after the sale was marked must not write a
// hold key on a sold seat (it would stay until the repeat's own MarkSold,
// or for the claim's minutes if that repeat fails before it).
func TestOrders_Confirm_RepeatNeverHoldsSoldSeats(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 40)
	ctx := context.Background()
	ev := env.Event
	const callers, watchers = 100, 8
	for round := range 12 {
		buyer := env.Account(t)
		seats := []string{ev.Labels[3*round], ev.Labels[3*round+1], ev.Labels[3*round+2]}
		o := env.Order(t, buyer, seats...)
		key, _ := env.Pay(t, o, sandbox.ScenarioWebhookNever)
		p, err := env.PG.Confirm(ctx, key, o.ID, o.Amount)
		if err != nil {
			t.Fatal(err)
		}
		keys := []string{env.R.Key("sold:{%d}", ev.ID)}
		args := make([]any, 0, len(seats))
		for _, l := range seats {
			keys, args = append(keys, env.R.Key("seat:lock:{%d}:%s", ev.ID, l)), append(args, l)
		}
		var left atomic.Int64
		left.Store(callers)
		var caught sync.Map // label -> true
		storetest.AtOnce(callers+watchers, func(i int) {
			if i >= callers {
				for left.Load() > 0 {
					l, err := soldAndHeldScript.Run(ctx, env.R.Client, keys, args...).Text()
					switch {
					case err == nil:
						caught.Store(l, true)
					case !errors.Is(err, redis.Nil):
						t.Errorf("round %d: look at the seats: %v", round, err)
						return
					}
				}
				return
			}
			defer left.Add(-1)
			for range 2 {
				if _, err := env.Orders.ConfirmPayment(ctx, o, p); err != nil {
					t.Errorf("round %d caller %d: %v", round, i, err)
				}
			}
		})
		caught.Range(func(l, _ any) bool {
			t.Errorf("round %d: seat %s was sold and held at once", round, l)
			return true
		})
		checkouttest.WantOrder(t, env.FindOrder(t, o.ID), boxoffice.OrderConfirmed, "")
		if labels, _ := env.MyHolds(t, buyer); len(labels) != 0 {
			t.Errorf("round %d: the buyer still holds %v after the sale", round, labels)
		}
		if t.Failed() {
			return
		}
	}
	env.CheckInvariants(t)
}
