package store_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
)

// refundSeats records in PostgreSQL, as a refund would, that the account's
// labels are sold no more, then takes them out of Redis's copy.
func refundSeats(tb testing.TB, env holdsEnv, eventID, accountID int64, labels []string) {
	tb.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, env.DB.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sold_seat WHERE event_id = $1 AND seat_label = ANY($2)`, eventID, labels); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE purchase_count SET tickets = tickets - $3 WHERE event_id = $1 AND account_id = $2`,
			eventID, accountID, len(labels))
		return err
	})
	if err != nil {
		tb.Errorf("refund %v of account %d: %v", labels, accountID, err)
		return
	}
	if err := store.Unsell(ctx, env.H, eventID, accountID, labels); err != nil {
		tb.Errorf("unsell %v of account %d: %v", labels, accountID, err)
	}
}

// seatLedger is what a test granted: each seat's holder or buyer, and the
// seats blocked. A seat is in at most one of them.
type seatLedger struct {
	mu      sync.Mutex
	tb      testing.TB
	owner   map[string]int64 // held or bought, by account
	sold    map[string]bool
	blocked map[string]bool
	taken   map[int64]int // seats an account holds or bought now
}

func newSeatLedger(tb testing.TB) *seatLedger {
	return &seatLedger{tb: tb, owner: map[string]int64{}, sold: map[string]bool{}, blocked: map[string]bool{}, taken: map[int64]int{}}
}

// grant records seats granted to acct (a hold), failing the test for a
// seat that another account holds or bought, or that is blocked, and when
// the account then holds or bought more than the limit. A seat held by
// hand may be one the account held already (it counts once).
func (l *seatLedger) grant(acct int64, labels []string, byHand bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range labels {
		if prev, ok := l.owner[s]; ok {
			if byHand && prev == acct {
				continue
			}
			l.tb.Errorf("%s granted to %d and to %d", s, prev, acct)
		}
		if l.blocked[s] {
			l.tb.Errorf("%s granted to %d while blocked", s, acct)
		}
		l.owner[s] = acct
		l.taken[acct]++
	}
	if l.taken[acct] > limit {
		l.tb.Errorf("account %d holds or bought %d seats, limit %d", acct, l.taken[acct], limit)
	}
}

// Best available's index (best:{e}:<grade>:<q>) is attacked from every
// side at once: hundreds of fans ask for pairs and quartets while others
// hold seats by hand, buy what they got, have purchases refunded, and an
// admin blocks and unblocks seats; every other round Redis then forgets
// everything. No seat is ever granted twice or while blocked, every grant
// is side by side, the limit holds, the seats blocked in PostgreSQL are
// those the admins' changes left blocked, and then the grade sells out through
// best available alone: every seat neither sold nor blocked is held, so no
// seat that became free again (refunded, unblocked, or lost with the index)
// was left out of it.
func TestHolds_HoldBest_IndexAttacked(t *testing.T) {
	t.Parallel()
	rounds, fans := 4, 240
	if storetest.ChaosLong() {
		rounds, fans = 10, 480
	}
	for round := range rounds {
		env := newBlocksEnv(t, 800) // R: 400 seats in 8 rows
		ev, ctx := env.Event, context.Background()
		led := newSeatLedger(t)
		var buys [][]string // sold sets, for refunds
		var buyers []int64
		// Fans who buy need accounts: 2,000,000 + i.
		_, err := env.DB.Pool.Exec(ctx, `
			INSERT INTO account (id, email, name, password_hash) OVERRIDING SYSTEM VALUE
			SELECT 2000000 + i, 'fan-' || i || '@example.com', 'Fan', 'x' FROM generate_series(0, $1::int - 1) AS i`, fans+len(ev.R))
		if err != nil {
			t.Fatalf("create accounts: %v", err)
		}
		// Most of the grade is sold before: in each row of 50 every
		// quartet but one in four, and the last two seats, so that rows
		// whose free quartets sell leave the index, and refunds bring them
		// back.
		for k := 0; k < len(ev.R); {
			n := 4
			if k%50 == 48 {
				n = 2
			}
			if k%50 == 48 || (k%50)/4%4 != 0 {
				buyer := int64(2000000 + fans + k)
				sellSeats(t, env.DB, ev.ID, buyer, ev.R[k:k+n]...)
				buys, buyers = append(buys, ev.R[k:k+n]), append(buyers, buyer)
				for _, s := range ev.R[k : k+n] {
					led.owner[s], led.sold[s] = buyer, true
				}
				led.taken[buyer] += n
			}
			k += n
		}
		// Redis's copy of the sold seats is loaded before the attack (a load
		// that many refunds race gives up, and the hold answers 503).
		if _, err := env.H.SeatStatuses(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: 1}); err != nil {
			t.Fatalf("load the sold seats: %v", err)
		}
		base := int64(round*10*fans + 1)
		storetest.AtOnce(fans, func(i int) {
			acct := int64(2000000 + i)
			switch i % 8 {
			case 5: // by hand: random pairs of the grade
				for range 3 {
					k := rand.IntN(len(ev.R) - 1)
					res, err := env.hold(ev.ID, acct, holdTTL, ev.R[k], ev.R[k+1])
					switch boxoffice.ErrorCode(err) {
					case "":
						led.grant(acct, res.Held, true)
					case boxoffice.ESEATTAKEN, boxoffice.ELIMITEXCEEDED:
					default:
						t.Errorf("account %d by hand: %v", acct, err)
					}
				}
			case 6: // refunds of what others bought
				for range 4 {
					led.mu.Lock()
					if len(buys) == 0 {
						led.mu.Unlock()
						continue
					}
					k := rand.IntN(len(buys))
					labels, buyer := buys[k], buyers[k]
					buys, buyers = append(buys[:k], buys[k+1:]...), append(buyers[:k], buyers[k+1:]...)
					for _, s := range labels {
						delete(led.owner, s)
						delete(led.sold, s)
					}
					led.taken[buyer] -= len(labels)
					led.mu.Unlock()
					refundSeats(t, env.holdsEnv, ev.ID, buyer, labels)
				}
			case 7: // an admin blocks random seats of its own, and unblocks some
				// The ledger records a block once its call returned, an
				// unblock before its call, and a refused unblock as
				// blocked still: only one admin's changes of a seat are
				// recorded in the order they committed. So each admin
				// has seats of its own (every admins-th from its
				// number), and the admins still race each other for the
				// event's one change at a time (ECONFLICT).
				admins := fans / 8 // the goroutines with i%8 == 7
				var own []string
				for k := i / 8; k < len(ev.R); k += admins {
					own = append(own, ev.R[k])
				}
				for range 3 {
					seats := []string{own[rand.IntN(len(own))], own[rand.IntN(len(own))]}
					if seats[0] == seats[1] {
						seats = seats[:1]
					}
					_, err := env.change(boxoffice.BlockActionBlock, seats...)
					switch boxoffice.ErrorCode(err) {
					case "":
						led.mu.Lock()
						for _, s := range seats {
							if _, ok := led.owner[s]; ok {
								t.Errorf("%s blocked while %d holds it", s, led.owner[s])
							}
							led.blocked[s] = true
						}
						led.mu.Unlock()
						if rand.IntN(2) == 0 {
							continue
						}
						led.mu.Lock()
						for _, s := range seats {
							delete(led.blocked, s)
						}
						led.mu.Unlock()
						if _, err := env.change(boxoffice.BlockActionUnblock, seats...); err != nil {
							led.mu.Lock()
							for _, s := range seats {
								led.blocked[s] = true
							}
							led.mu.Unlock()
							if boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
								t.Errorf("unblock %v: %v", seats, err)
							}
						}
					case boxoffice.ECONFLICT, boxoffice.ESEATTAKEN:
					default:
						t.Errorf("block %v: %v", seats, err)
					}
				}
			default: // best available, buying some of what it got
				q := 2 + 2*(i%2)
				for range 3 {
					res, err := env.holdBest(ev.ID, acct, "R", q)
					switch boxoffice.ErrorCode(err) {
					case "":
						if len(res.Held) != q || !together(res.Held) {
							t.Errorf("account %d asked %d together, got %v", acct, q, res.Held)
						}
						led.grant(acct, res.Held, false)
						if rand.IntN(2) == 0 {
							continue
						}
						total := sellSeats(t, env.DB, ev.ID, acct, res.Held...)
						if err := env.H.MarkSold(ctx, ev.ID, acct, res.Held, total); err != nil {
							t.Errorf("MarkSold %v: %v", res.Held, err)
						}
						led.mu.Lock()
						for _, s := range res.Held {
							led.sold[s] = true
						}
						buys, buyers = append(buys, res.Held), append(buyers, acct)
						led.mu.Unlock()
					case boxoffice.EBADCHOICE, boxoffice.ENOTTOGETHER:
					default:
						t.Errorf("account %d best available: %v", acct, err)
					}
				}
			}
		})
		for s, acct := range led.owner {
			if got := env.lock(t, ev.ID, s); !led.sold[s] && got != acctID(acct) {
				t.Errorf("round %d: lock of %s = %q, want %d", round, s, got, acct)
			}
		}
		blocked := env.blockedRows(t)
		slices.Sort(blocked) // in Go's order, whatever PostgreSQL's collation
		if want := slices.Sorted(maps.Keys(led.blocked)); !slices.Equal(blocked, want) {
			t.Errorf("round %d: blocked seats %v, want %v (the admins' changes that went through)", round, blocked, want)
		}
		if t.Failed() {
			return
		}

		if round%2 == 1 { // Redis forgets: holds go, sales and blocks stay in PostgreSQL
			forgetRedis(t, env.R)
			for s := range led.owner {
				if !led.sold[s] {
					delete(led.owner, s)
				}
			}
		}
		// The rest sells out through best available alone.
		env.sellOutThroughBest(t, ev.ID, fans, base+int64(2*fans), func(acct int64, held []string) { led.grant(acct, held, false) })
		var missed []string
		for _, s := range ev.R {
			if _, ok := led.owner[s]; !ok && !led.blocked[s] {
				missed = append(missed, s)
			}
		}
		if len(missed) > 0 {
			t.Fatalf("round %d: %d free seats never offered by best available: %v", round, len(missed), missed)
		}
		for s, acct := range led.owner {
			if got := env.lock(t, ev.ID, s); !led.sold[s] && got != acctID(acct) {
				t.Fatalf("round %d: lock of %s = %q, want %d", round, s, got, acct)
			}
		}
		if got := fmt.Sprint(len(led.owner) + len(led.blocked)); got != fmt.Sprint(len(ev.R)) {
			t.Fatalf("round %d: %s seats held, sold or blocked, want all %d", round, got, len(ev.R))
		}
	}
}
