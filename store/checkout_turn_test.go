package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/redis/go-redis/v9"
)

// turnEnv is a checkout env whose fans are admitted through the queue, so
// that each holds a real entry token bound to its session.
type turnEnv struct {
	*checkouttest.Env
	Q *store.Queue
}

func newTurnEnv(tb testing.TB, seats int) turnEnv {
	tb.Helper()
	env := checkouttest.New(tb, seats)
	return turnEnv{Env: env, Q: &store.Queue{Redis: env.R}}
}

// sid is the session key a fan of the tests joined from.
func sid(acct int64) string { return fmt.Sprintf("sid-%d", acct) }

// admit makes n accounts, joins each from its session (sid) and admits
// them all with a token of tokenTTL.
func (env turnEnv) admit(tb testing.TB, n int, tokenTTL time.Duration) []int64 {
	tb.Helper()
	ctx := context.Background()
	accts := make([]int64, n)
	for i := range accts {
		accts[i] = env.Account(tb)
		if _, err := env.Q.Join(ctx, boxoffice.JoinRequest{EventID: env.Event.ID, AccountID: accts[i], SessionKey: sid(accts[i])}); err != nil {
			tb.Fatalf("join: %v", err)
		}
	}
	r, err := env.Q.Admit(ctx, boxoffice.AdmissionSettings{EventID: env.Event.ID, Rate: 10 * n, TokenTTL: tokenTTL}, 1, time.Second)
	if err != nil || len(r.Admitted) != n {
		tb.Fatalf("admit: %+v, %v; want %d admitted", r, err, n)
	}
	return accts
}

// hold holds labels for the account, failing the test on any refusal.
func (env turnEnv) hold(tb testing.TB, acct int64, labels ...string) {
	tb.Helper()
	req := boxoffice.HoldRequest{EventID: env.Event.ID, AccountID: acct, SessionKey: sid(acct), Limit: checkouttest.Limit, TTL: checkouttest.HoldTTL}
	if _, err := env.Holds.Hold(context.Background(), req, labels); err != nil {
		tb.Fatalf("account %d holds %v: %v", acct, labels, err)
	}
}

// turn is an account's entry token as Redis has it: its expiry (Unix ms;
// -2 when the token is gone) and its score in entry:live:{e} (the expiry
// the admitter counts live shoppers by; 0 done, 1 left).
type turn struct{ expiry, score int64 }

func (env turnEnv) turn(tb testing.TB, acct int64) turn {
	tb.Helper()
	ctx := context.Background()
	exp, err := env.R.Client.Do(ctx, "PEXPIRETIME", env.R.Key("entry:{%d}:%d", env.Event.ID, acct)).Int64()
	if err != nil {
		tb.Fatalf("PEXPIRETIME of the entry token: %v", err)
	}
	score, err := env.R.Client.ZScore(ctx, env.R.Key("entry:live:{%d}", env.Event.ID), fmt.Sprint(acct)).Result()
	if err != nil {
		tb.Fatalf("ZSCORE of the token in entry:live: %v", err)
	}
	return turn{expiry: exp, score: int64(score)}
}

// setTurnExpiry makes the account's token end at the Unix ms at, as a token
// issued that long before would: its key and its entry:live:{e} score.
func (env turnEnv) setTurnExpiry(tb testing.TB, acct, at int64) {
	tb.Helper()
	ctx := context.Background()
	if err := env.R.Client.PExpireAt(ctx, env.R.Key("entry:{%d}:%d", env.Event.ID, acct), time.UnixMilli(at)).Err(); err != nil {
		tb.Fatal(err)
	}
	if err := env.R.Client.ZAdd(ctx, env.R.Key("entry:live:{%d}", env.Event.ID), redis.Z{Score: float64(at), Member: acct}).Err(); err != nil {
		tb.Fatal(err)
	}
}

// holdExpiry is the expiry (Unix ms) of the seat's hold.
func (env turnEnv) holdExpiry(tb testing.TB, label string) int64 {
	tb.Helper()
	exp, err := env.R.Client.Do(context.Background(), "PEXPIRETIME", env.R.Key("seat:lock:{%d}:%s", env.Event.ID, label)).Int64()
	if err != nil {
		tb.Fatal(err)
	}
	return exp
}

// payable is the account's order awaiting payment, or nil.
func (env turnEnv) payable(tb testing.TB, acct int64) *boxoffice.Order {
	tb.Helper()
	orders, err := env.Orders.FindOrders(context.Background(), acct)
	if err != nil {
		tb.Fatal(err)
	}
	var found *boxoffice.Order
	for _, o := range orders {
		if o.Status == boxoffice.OrderPendingPayment {
			if found != nil {
				tb.Fatalf("account %d: orders %s and %s both await payment", acct, found.ID, o.ID)
			}
			found = o
		}
	}
	return found
}

// redisNow is Redis's clock in Unix ms.
func (env turnEnv) redisNow(tb testing.TB) int64 {
	tb.Helper()
	now, err := env.R.Client.Time(context.Background()).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return now.UnixMilli()
}

// wantOutlives checks that the account's turn lasts at least until the
// order's payment window ends and as long as the holds of its seats, and
// that the admitter counts it live until then (entry:live:{e}).
func (env turnEnv) wantOutlives(tb testing.TB, acct int64, o *boxoffice.Order) {
	tb.Helper()
	tr := env.turn(tb, acct)
	if tr.score != tr.expiry {
		tb.Errorf("the token ends at %d but entry:live:{e} says %d", tr.expiry, tr.score)
	}
	// Redis's clock has whole milliseconds: the hold and the token end
	// within the millisecond of the order's expiry.
	if ends := o.ExpiresAt.UnixMilli() - 1; tr.expiry < ends {
		tb.Errorf("the turn ends %v before the order's payment window does", time.Duration(ends-tr.expiry)*time.Millisecond)
	}
	for _, it := range o.Items {
		if h := env.holdExpiry(tb, it.Seat); tr.expiry < h {
			tb.Errorf("the turn ends %v before the hold of %s", time.Duration(h-tr.expiry)*time.Millisecond, it.Seat)
		}
	}
}

// A checkout extends the fan's turn with the holds, to the end of the
// order's payment window, in the same script: a token admitted with less
// time left than the window outlives it, the fan's session keeps it, and a
// later checkout extends it again. A token that lasts longer keeps its
// expiry, one that ended stays ended, and a checkout that lost a hold (its
// order cancelled) extends nothing.
func TestOrders_CreateOrder_ExtendsTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OutlivesThePaymentWindow", func(t *testing.T) {
		t.Parallel()
		env := newTurnEnv(t, 10)
		acct := env.admit(t, 1, time.Minute)[0]
		before := env.turn(t, acct)
		env.hold(t, acct, env.Event.R[0], env.Event.R[1])
		o, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct)
		if err != nil {
			t.Fatal(err)
		}
		env.wantOutlives(t, acct, o)
		if after := env.turn(t, acct); after.expiry <= before.expiry {
			t.Errorf("the turn ends at %d after the checkout, want later than %d", after.expiry, before.expiry)
		}
		if _, _, err := env.Q.EntryToken(ctx, env.Event.ID, acct, sid(acct)); err != nil {
			t.Errorf("the fan's session after the checkout: %v, want its turn", err)
		}

		// The turn ran down meanwhile; a later checkout extends it again.
		env.setTurnExpiry(t, acct, env.redisNow(t)+30_000)
		env.hold(t, acct, env.Event.R[2])
		again, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID == o.ID {
			t.Fatalf("the checkout of another seat returned the first order %s", o.ID)
		}
		env.wantOutlives(t, acct, again)
	})

	t.Run("NeverShortens", func(t *testing.T) {
		t.Parallel()
		env := newTurnEnv(t, 10)
		acct := env.admit(t, 1, 2*boxoffice.DefaultPaymentWindow)[0]
		before := env.turn(t, acct)
		env.hold(t, acct, env.Event.R[0])
		if _, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct); err != nil {
			t.Fatal(err)
		}
		if after := env.turn(t, acct); after != before {
			t.Errorf("the turn is %+v after the checkout, want it as it was, %+v", after, before)
		}
	})

	t.Run("EndedStaysEnded", func(t *testing.T) {
		t.Parallel()
		env := newTurnEnv(t, 10)
		acct := env.admit(t, 1, time.Minute)[0]
		env.hold(t, acct, env.Event.R[0])
		ran := env.redisNow(t) - 1
		env.setTurnExpiry(t, acct, ran) // the turn ran out a millisecond ago
		if _, err := env.Orders.CreateOrder(ctx, env.Event.ID, acct); err != nil {
			t.Fatal(err)
		}
		if after := env.turn(t, acct); after != (turn{expiry: -2, score: ran}) {
			t.Errorf("the turn is %+v after the checkout, want it ended at %d", after, ran)
		}
		_, _, err := env.Q.EntryToken(ctx, env.Event.ID, acct, sid(acct))
		wantCodeReason(t, err, boxoffice.ENOENTRYTOKEN, boxoffice.ReasonExpired)
	})

	t.Run("HoldLost", func(t *testing.T) {
		t.Parallel()
		env := newTurnEnv(t, 10)
		acct := env.admit(t, 1, time.Minute)[0]
		env.hold(t, acct, env.Event.R[0])
		before := env.turn(t, acct)
		err := env.Holds.ExtendHolds(ctx, env.Event.ID, acct, "order-x", []string{env.Event.R[0], env.Event.R[1]}, boxoffice.DefaultPaymentWindow)
		wantError(t, err, boxoffice.ESEATTAKEN)
		if after := env.turn(t, acct); after != before {
			t.Errorf("the turn is %+v after a checkout that lost a hold, want it as it was, %+v", after, before)
		}
	})
}

// Checkouts raced against the end of the turn: for hundreds of fans at
// once, a checkout against the fan leaving the sale or logging out
// (Leave with the fan's session), against a second checkout (a double
// click) with the token running out at that very moment, and against a
// leave with the token running out. Whatever the order, the turn is never
// brought back once it ended, never shortened, lasts as long as the
// order's holds while the order awaits payment, and entry:live:{e} (what
// admission counts shoppers by) agrees with the token; a leave that
// happened means no payable order.
func TestOrders_CreateOrder_TurnRaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const fans = 120
	rounds := 3
	if storetest.ChaosLong() {
		rounds = 10
	}
	for round := range rounds {
		env := newTurnEnv(t, fans)
		accts := env.admit(t, fans, time.Minute)
		for i, a := range accts {
			env.hold(t, a, env.Event.Labels[i])
		}
		before := make([]turn, fans)
		for i, a := range accts {
			before[i] = env.turn(t, a)
		}
		// Fans of kinds 1 and 2 have a token that runs out while the
		// checkouts run (within 300 ms from now), set in one round trip.
		now := env.redisNow(t)
		pipe := env.R.Client.TxPipeline()
		for i, a := range accts {
			if i%3 != 0 {
				at := now + rand.Int64N(300)
				pipe.PExpireAt(ctx, env.R.Key("entry:{%d}:%d", env.Event.ID, a), time.UnixMilli(at))
				pipe.ZAdd(ctx, env.R.Key("entry:live:{%d}", env.Event.ID), redis.Z{Score: float64(at), Member: a})
				before[i] = turn{expiry: at, score: at}
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		orders := make([]*boxoffice.Order, 2*fans)
		errs := make([]error, 2*fans)
		storetest.AtOnce(2*fans, func(i int) {
			fan := i / 2
			a := accts[fan]
			if i%2 == 0 || fan%3 == 1 {
				orders[i], errs[i] = env.Orders.CreateOrder(ctx, env.Event.ID, a)
				return
			}
			errs[i] = env.Holds.Leave(ctx, boxoffice.Shopper{EventID: env.Event.ID, AccountID: a, SessionKey: sid(a)})
		})

		var nLeft, nPaid, nPaidEnded, nNone int
		for fan, a := range accts {
			for _, i := range []int{2 * fan, 2*fan + 1} {
				if i%2 == 0 || fan%3 == 1 {
					switch boxoffice.ErrorCode(errs[i]) {
					case "", boxoffice.ENOHOLDS, boxoffice.ESEATTAKEN:
					default:
						t.Fatalf("round %d, fan %d: checkout: %v", round, fan, errs[i])
					}
					continue
				}
				switch c := boxoffice.ErrorCode(errs[i]); {
				case errs[i] == nil, c == boxoffice.EORDERPENDING, c == boxoffice.ENOENTRYTOKEN:
				default:
					t.Fatalf("round %d, fan %d: leave: %v", round, fan, errs[i])
				}
			}
			left := fan%3 != 1 && errs[2*fan+1] == nil
			payable := env.payable(t, a)
			tr := env.turn(t, a)
			now := env.redisNow(t) // after the read: a token gone then had ended by now
			switch {
			case left:
				nLeft++
			case payable != nil && tr.expiry >= 0:
				nPaid++
			case payable != nil:
				nPaidEnded++
			default:
				nNone++
			}
			switch {
			case left && payable != nil:
				t.Errorf("round %d, fan %d: left the sale, and order %s awaits payment", round, fan, payable.ID)
			case left && tr != (turn{expiry: -2, score: 1}):
				t.Errorf("round %d, fan %d: left the sale, and the turn is %+v, want it ended as left", round, fan, tr)
			case tr.expiry >= 0 && tr.score != tr.expiry:
				t.Errorf("round %d, fan %d: the token ends at %d but entry:live:{e} says %d", round, fan, tr.expiry, tr.score)
			case tr.expiry >= 0 && tr.expiry < before[fan].expiry:
				t.Errorf("round %d, fan %d: the turn was shortened from %d to %d", round, fan, before[fan].expiry, tr.expiry)
			case tr.expiry < 0 && tr.score > now:
				t.Errorf("round %d, fan %d: the token is gone but counts as live until %d (now %d)", round, fan, tr.score, now)
			case tr.expiry >= 0 && payable != nil:
				env.wantOutlives(t, a, payable)
			case tr.expiry >= 0 && tr.expiry != before[fan].expiry:
				t.Errorf("round %d, fan %d: no order awaits payment, and the turn moved from %d to %d", round, fan, before[fan].expiry, tr.expiry)
			}
		}
		t.Logf("round %d: %d fans left, %d orders await payment in a turn, %d after the turn ran out, %d fans with neither", round, nLeft, nPaid, nPaidEnded, nNone)
		env.CheckInvariants(t)
	}
}
