package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// prequeueJoin is a join of the pre-queue drawn at drawAt under seed, with
// a fresh ticket.
func prequeueJoin(tb testing.TB, seed []byte, drawAt time.Time, acct int64, session string) boxoffice.JoinRequest {
	tb.Helper()
	b := make([]byte, boxoffice.DrawTicketBytes)
	rand.Read(b)
	ticket := hex.EncodeToString(b)
	return boxoffice.JoinRequest{EventID: queueEvent, AccountID: acct, SessionKey: session,
		DrawAt: drawAt, Ticket: ticket, Rank: boxoffice.DrawRank(seed, ticket)}
}

// The draw: 1,000 fans join the pre-queue (each from several tabs at once:
// one ticket per fan); at the opening two instances draw while 300 fans
// join at once, and the line is exactly the entrants in the order
// recomputed from the published seed and tickets, then the later fans in
// the order they joined; the draw happens once.
func TestQueue_Draw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	q2 := sameQueue(t, q)
	seed := make([]byte, boxoffice.DrawSeedBytes)
	rand.Read(seed)
	const entrants, late = 1000, 300
	before := time.Now().Add(time.Hour) // the draw's time, while the pre-queue is open

	tickets := make([]string, 3*entrants)
	storetest.AtOnce(3*entrants, func(i int) {
		a := int64(i%entrants + 1)
		p, err := q.Join(ctx, prequeueJoin(t, seed, before, a, fmt.Sprintf("tab-%d", i)))
		if err != nil || p.Status != boxoffice.QueuePrequeue || !boxoffice.ValidDrawTicket(p.Ticket) {
			t.Errorf("pre-queue join of %d = %+v, %v", a, p, err)
		}
		tickets[i] = p.Ticket
	})
	byAccount := map[int64]string{}
	for i, tk := range tickets {
		a := int64(i%entrants + 1)
		if prev, ok := byAccount[a]; ok && prev != tk {
			t.Fatalf("account %d got tickets %s and %s, want one", a, prev, tk)
		}
		byAccount[a] = tk
	}
	drawn, n, published, err := q.DrawState(ctx, queueEvent)
	if err != nil || drawn || n != entrants || published != nil {
		t.Fatalf("before the draw: drawn %v, %d entrants, tickets %v (%v); want not drawn, %d, none published", drawn, n, published, err, entrants)
	}

	// The opening: the draw's time is past. Instances draw and fans join at once.
	opened := time.Now().Add(-time.Second)
	var draws atomic.Int32
	lateSeq := make([]int64, late)
	storetest.AtOnce(200+late, func(i int) {
		if i < 200 {
			qi := q
			if i%2 == 1 {
				qi = q2
			}
			ok, err := qi.Draw(ctx, queueEvent, opened)
			if err != nil || !ok {
				t.Errorf("Draw = %v, %v", ok, err)
			}
			draws.Add(1)
			return
		}
		a := int64(entrants + 1 + i - 200)
		p, err := q2.Join(ctx, prequeueJoin(t, seed, opened, a, sess(a)))
		if err != nil || p.Status != boxoffice.QueueWaiting {
			t.Errorf("join after the opening of %d = %+v, %v", a, p, err)
		}
		lateSeq[i-200] = p.Sequence
	})
	drawn, n, published, err = q.DrawState(ctx, queueEvent)
	if err != nil || !drawn || n != entrants || len(published) != entrants {
		t.Fatalf("after the draw: drawn %v, %d entrants, %d tickets (%v)", drawn, n, len(published), err)
	}
	if err := boxoffice.VerifyDraw(boxoffice.DrawCommitment(seed), hex.EncodeToString(seed), published); err != nil {
		t.Fatalf("the published draw does not verify: %v", err)
	}
	all := make([]string, 0, entrants)
	for _, tk := range byAccount {
		all = append(all, tk)
	}
	if want := boxoffice.DrawOrder(seed, all); !slices.Equal(published, want) {
		t.Fatal("the published tickets are not every entrant's in the order the seed gives")
	}

	// The line: the entrants in drawn order at sequences 1..1000, then the
	// late fans, each once.
	line, err := q.Redis.Client.ZRangeWithScores(ctx, q.Redis.Key("queue:{%d}", queueEvent), 0, -1).Result()
	if err != nil || len(line) != entrants+late {
		t.Fatalf("line of %d (%v), want %d", len(line), err, entrants+late)
	}
	ticketOf := map[string]string{}
	for a, tk := range byAccount {
		ticketOf[fmt.Sprint(a)] = tk
	}
	for i, z := range line[:entrants] {
		if ticketOf[z.Member.(string)] != published[i] || int(z.Score) != i+1 {
			t.Fatalf("place %d holds account %v at sequence %v, want the holder of ticket %s at %d", i+1, z.Member, z.Score, published[i], i+1)
		}
	}
	for _, s := range lateSeq {
		if s <= entrants {
			t.Fatalf("a fan who joined after the opening has sequence %d, within the entrants' 1..%d", s, entrants)
		}
	}
	// Later joins queue behind in join order; a rejoin keeps its place and
	// a new pre-queue ticket changes nothing once drawn.
	p, err := q.Join(ctx, prequeueJoin(t, seed, opened, 99999, sess(99999)))
	if err != nil || p.Sequence != entrants+late+1 {
		t.Fatalf("next join = %+v, %v; want sequence %d", p, err, entrants+late+1)
	}
	p, err = q.Join(ctx, prequeueJoin(t, seed, opened, 1, "another-device"))
	if err != nil || p.Status != boxoffice.QueueWaiting || int(p.Sequence) != slices.Index(published, byAccount[1])+1 {
		t.Fatalf("entrant 1's rejoin = %+v, %v; want its drawn place %d", p, err, slices.Index(published, byAccount[1])+1)
	}
	// Admission starts at the head of the drawn line.
	r, err := q.Admit(ctx, boxoffice.AdmissionSettings{EventID: queueEvent, Rate: 10, TokenTTL: time.Hour, DrawAt: opened}, 1, time.Second)
	if err != nil || len(r.Admitted) != 10 {
		t.Fatalf("Admit = %+v, %v", r, err)
	}
	for i, a := range r.Admitted {
		if byAccount[a] != published[i] {
			t.Fatalf("admitted #%d is account %d with ticket %s, want the holder of %s", i+1, a, byAccount[a], published[i])
		}
	}
}

// The seed is drawn once per event, whoever asks first.
func TestDraws_Seed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	ev := newHoldEvent(t, db, 2)
	seeds := make([][]byte, 100)
	storetest.AtOnce(len(seeds), func(i int) {
		var err error
		if seeds[i], err = (&store.Draws{DB: db}).Seed(ctx, ev.ID); err != nil {
			t.Errorf("Seed: %v", err)
		}
	})
	for _, s := range seeds {
		if len(s) != boxoffice.DrawSeedBytes || !slices.Equal(s, seeds[0]) {
			t.Fatalf("seeds differ or are not %d bytes: %x and %x", boxoffice.DrawSeedBytes, s, seeds[0])
		}
	}
	if _, err := (&store.Draws{DB: db}).Seed(ctx, 987654); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Fatalf("Seed of an unknown event: %v, want %s", err, boxoffice.ENOTFOUND)
	}
}
