package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

const queueEvent = 42

func newQueue(tb testing.TB) *store.Queue {
	tb.Helper()
	return &store.Queue{Redis: storetest.MustOpenRedis(tb)}
}

// sameQueue opens a second Redis client on q's prefix, as a second instance
// of the app would.
func sameQueue(tb testing.TB, q *store.Queue) *store.Queue {
	tb.Helper()
	r, err := store.OpenRedis(context.Background(), storetest.RedisURL(), q.Redis.Prefix)
	if err != nil {
		tb.Fatalf("open second Redis client: %v", err)
	}
	tb.Cleanup(func() { r.Close() })
	return &store.Queue{Redis: r}
}

func admission(rate int) boxoffice.AdmissionSettings {
	return boxoffice.AdmissionSettings{EventID: queueEvent, Rate: rate, TokenTTL: time.Hour}
}

// source is an AdmissionSource whose settings tests change as they go.
type source struct {
	mu sync.Mutex
	s  []boxoffice.AdmissionSettings
}

func (s *source) OpenQueues(context.Context, time.Time) ([]boxoffice.AdmissionSettings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.s), nil
}

func sess(acct int64) string { return fmt.Sprintf("sid-%d", acct) }

// mustJoin joins accounts from..to of queueEvent in order and returns their
// sequences.
func mustJoin(tb testing.TB, q *store.Queue, from, to int64) map[int64]int64 {
	tb.Helper()
	seqs := make(map[int64]int64, to-from+1)
	for a := from; a <= to; a++ {
		p, err := q.Join(context.Background(), boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: sess(a)})
		if err != nil || p.Status != boxoffice.QueueWaiting {
			tb.Fatalf("Join(%d) = %+v, %v; want waiting", a, p, err)
		}
		seqs[a] = p.Sequence
	}
	return seqs
}

func mustAdmit(tb testing.TB, q *store.Queue, s boxoffice.AdmissionSettings, tick int64) store.AdmitResult {
	tb.Helper()
	r, err := q.Admit(context.Background(), s, tick, time.Second)
	if err != nil {
		tb.Fatalf("Admit(tick %d): %v", tick, err)
	}
	return r
}

func wantCodeReason(tb testing.TB, err error, code, reason string) {
	tb.Helper()
	wantCode(tb, err, code)
	if got := boxoffice.NoEntryReason(err); reason != "" && got != reason {
		tb.Fatalf("error %v has reason %q, want %q", err, got, reason)
	}
}

// entryOf reads entry:{e}:{acct} straight from Redis: token and session key.
func entryOf(tb testing.TB, q *store.Queue, acct int64) (string, string, bool) {
	tb.Helper()
	v, err := q.Redis.Client.Get(context.Background(), q.Redis.Key("entry:{%d}:%d", queueEvent, acct)).Result()
	if err == redis.Nil {
		return "", "", false
	} else if err != nil {
		tb.Fatalf("read entry of %d: %v", acct, err)
	}
	tok, s, _ := strings.Cut(v, "|")
	return tok, s, true
}

func TestQueue_Join(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		q := newQueue(t)
		p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 7, SessionKey: "s7"})
		if err != nil {
			t.Fatal(err)
		}
		want := boxoffice.QueuePosition{Status: boxoffice.QueueWaiting, Position: 1, Ahead: 0, Sequence: 1, Epoch: p.Epoch}
		if p != want || !boxoffice.ValidQueueEpoch(p.Epoch) {
			t.Fatalf("Join = %+v, want %+v with a valid epoch", p, want)
		}
		p2, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 8, SessionKey: "s8"})
		if err != nil || p2.Position != 2 || p2.Ahead != 1 || p2.Epoch != p.Epoch {
			t.Fatalf("second Join = %+v, %v; want position 2, ahead 1, epoch %q", p2, err, p.Epoch)
		}
		if got, err := q.Position(ctx, queueEvent, 8, boxoffice.QueuePlace{Epoch: p.Epoch}); err != nil || got != p2 {
			t.Fatalf("Position = %+v, %v; want %+v", got, err, p2)
		}
	})

	t.Run("RejoinKeepsPlaceAndMovesSession", func(t *testing.T) {
		q := newQueue(t)
		mustJoin(t, q, 1, 3)
		p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 2, SessionKey: "other-device"})
		if err != nil || p.Sequence != 2 || p.Position != 2 {
			t.Fatalf("rejoin = %+v, %v; want sequence 2 and position 2", p, err)
		}
		s := admission(3)
		mustAdmit(t, q, s, 1)
		if _, _, err := q.EntryToken(ctx, queueEvent, 2, sess(2)); boxoffice.NoEntryReason(err) != boxoffice.ReasonOtherSession {
			t.Fatalf("EntryToken from the first session: %v, want reason %s", err, boxoffice.ReasonOtherSession)
		}
		if _, _, err := q.EntryToken(ctx, queueEvent, 2, "other-device"); err != nil {
			t.Fatalf("EntryToken from the session that rejoined: %v", err)
		}
	})

	// A place whose session binding is gone (queue:sess:{e} evicted, or
	// restored apart from queue:{e}) is kept on a rejoin and bound again;
	// the sequence the script drew to find out is given back, so the next
	// fan's place follows with no gap.
	t.Run("RejoinAfterLostBinding", func(t *testing.T) {
		q := newQueue(t)
		mustJoin(t, q, 1, 3)
		if err := q.Redis.Client.Del(ctx, q.Redis.Key("queue:sess:{%d}", queueEvent)).Err(); err != nil {
			t.Fatal(err)
		}
		p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 2, SessionKey: "other-device"})
		if err != nil || p.Status != boxoffice.QueueWaiting || p.Sequence != 2 || p.Position != 2 {
			t.Fatalf("rejoin = %+v, %v; want waiting with sequence 2 and position 2", p, err)
		}
		p4, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 4, SessionKey: sess(4)})
		if err != nil || p4.Sequence != 4 {
			t.Fatalf("next fan's Join = %+v, %v; want sequence 4", p4, err)
		}
		got, err := q.Redis.Client.HGet(ctx, q.Redis.Key("queue:sess:{%d}", queueEvent), "2").Result()
		if err != nil || got != "other-device" {
			t.Fatalf("binding of the rejoined place = %q, %v; want other-device", got, err)
		}
	})

	// A rejoin from another session of the account (after a log-out, a lost
	// cookie, on a second device) moves the live turn there: a fresh token
	// bound to the rejoining session, expiring when the first one would
	// have; the earlier session's token stops working everywhere.
	t.Run("AdmittedRejoinMovesTurn", func(t *testing.T) {
		q := newQueue(t)
		mustJoin(t, q, 1, 2)
		mustAdmit(t, q, admission(1), 1)
		key := q.Redis.Key("entry:{%d}:%d", queueEvent, 1)
		expiry := func() time.Duration {
			t.Helper()
			d, err := q.Redis.Client.PExpireTime(ctx, key).Result()
			if err != nil || d <= 0 {
				t.Fatalf("PEXPIRETIME of the entry key = %v, %v; want an expiry", d, err)
			}
			return d
		}
		first, _, _ := entryOf(t, q, 1)
		expires := expiry()

		p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 1, SessionKey: sess(1)})
		if err != nil || p.Status != boxoffice.QueueAdmitted {
			t.Fatalf("Join from the token's session = %+v, %v; want admitted", p, err)
		}
		if tok, s, _ := entryOf(t, q, 1); tok != first || s != sess(1) {
			t.Fatalf("a rejoin from the token's own session changed it to %q bound to %q", tok, s)
		}

		p, err = q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 1, SessionKey: "another-tab"})
		if err != nil || p.Status != boxoffice.QueueAdmitted {
			t.Fatalf("Join from another session with a live token = %+v, %v; want admitted", p, err)
		}
		moved, s, _ := entryOf(t, q, 1)
		if s != "another-tab" || moved == "" || moved == first {
			t.Fatalf("after the rejoin the entry is %q bound to %q; want a fresh token bound to another-tab", moved, s)
		}
		if got := expiry(); got != expires {
			t.Fatalf("the rejoin moved the turn's end from %v to %v; want it unchanged", expires, got)
		}
		if got, _, err := q.EntryToken(ctx, queueEvent, 1, "another-tab"); err != nil || got != moved {
			t.Fatalf("EntryToken from the rejoining session = %q, %v; want %q", got, err, moved)
		}
		if err := q.CheckEntry(ctx, queueEvent, 1, "another-tab"); err != nil {
			t.Fatalf("CheckEntry of the moved token in the rejoining session: %v", err)
		}
		_, _, err = q.EntryToken(ctx, queueEvent, 1, sess(1))
		wantCodeReason(t, err, boxoffice.ENOENTRYTOKEN, boxoffice.ReasonOtherSession)
		wantCodeReason(t, q.CheckEntry(ctx, queueEvent, 1, sess(1)), boxoffice.ENOENTRYTOKEN, boxoffice.ReasonOtherSession)
		if n, _ := q.Redis.Client.ZCard(ctx, q.Redis.Key("queue:{%d}", queueEvent)).Result(); n != 1 {
			t.Fatalf("line length after an admitted fan rejoined = %d, want 1", n)
		}
		if st, err := q.QueueStats(ctx, queueEvent); err != nil || st.LiveTokens != 1 || st.AdmittedTotal != 1 {
			t.Fatalf("QueueStats after the move = %+v, %v; want 1 live token, 1 admitted", st, err)
		}
	})

	t.Run("SoldOut", func(t *testing.T) {
		q := newQueue(t)
		seqs := mustJoin(t, q, 1, 3)
		s := admission(1)
		s.SoldOut = true
		r := mustAdmit(t, q, s, 1)
		if len(r.Admitted) != 0 || r.Waiting != 3 {
			t.Fatalf("sold-out Admit = %+v, want nobody admitted and 3 waiting", r)
		}
		p, err := q.Position(ctx, queueEvent, 2, boxoffice.QueuePlace{})
		if err != nil || p.Status != boxoffice.QueueSoldOut || p.Position != 2 || p.ETA != 0 || p.Sequence != seqs[2] {
			t.Fatalf("Position after sell-out = %+v, %v; want sold_out at position 2 with no ETA", p, err)
		}
		p, err = q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 9, SessionKey: "s9"})
		if err != nil || p.Status != boxoffice.QueueSoldOut || p.Sequence != 0 {
			t.Fatalf("Join after sell-out = %+v, %v; want sold_out and no place", p, err)
		}
		s.SoldOut = false // seats came back (refunds): admission resumes in order
		r = mustAdmit(t, q, s, 2)
		if !slices.Equal(r.Admitted, []int64{1}) {
			t.Fatalf("Admit after the sell-out ended admitted %v, want [1]", r.Admitted)
		}
	})

	t.Run("Paused", func(t *testing.T) {
		q := newQueue(t)
		mustJoin(t, q, 1, 3)
		s := admission(2)
		s.Paused = true
		if r := mustAdmit(t, q, s, 1); len(r.Admitted) != 0 {
			t.Fatalf("paused Admit admitted %v, want nobody", r.Admitted)
		}
		p, err := q.Position(ctx, queueEvent, 1, boxoffice.QueuePlace{})
		if err != nil || p.Status != boxoffice.QueueWaiting || !p.Paused || p.ETA != 0 {
			t.Fatalf("Position while paused = %+v, %v; want waiting, paused, no ETA", p, err)
		}
		s.Paused = false
		if r := mustAdmit(t, q, s, 2); !slices.Equal(r.Admitted, []int64{1, 2}) {
			t.Fatalf("Admit after resuming admitted %v, want [1 2]", r.Admitted)
		}
	})

	t.Run("ErrEmptySession", func(t *testing.T) {
		q := newQueue(t)
		if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 1, SessionKey: ""}); err == nil {
			t.Fatal("Join with an empty session key succeeded, want an error")
		}
	})

	t.Run("ErrNotInQueue", func(t *testing.T) {
		q := newQueue(t)
		mustJoin(t, q, 1, 1)
		_, err := q.Position(ctx, queueEvent, 99, boxoffice.QueuePlace{})
		wantCodeReason(t, err, boxoffice.ENOTINQUEUE, boxoffice.ReasonNone)
	})
}

// Fairness (rule 6): 1,000 accounts join at once; each gets a distinct
// sequence, the line is admitted in exactly sequence order, and rejoining,
// concurrently and many times while admission runs, never changes a place.
func TestQueue_Fairness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	const fans = 1000
	seqs := make([]int64, fans+1)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for a := int64(1); a <= fans; a++ {
		wg.Go(func() {
			<-start
			p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: sess(a)})
			if err != nil || p.Status != boxoffice.QueueWaiting {
				t.Errorf("Join(%d) = %+v, %v", a, p, err)
				return
			}
			seqs[a] = p.Sequence
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	order := make([]int64, 0, fans) // accounts by sequence
	for a := int64(1); a <= fans; a++ {
		order = append(order, a)
	}
	slices.SortFunc(order, func(a, b int64) int { return int(seqs[a] - seqs[b]) })
	for i, a := range order {
		if seqs[a] != int64(i+1) {
			t.Fatalf("sequences are not 1..%d without gaps or ties: the %dth is %d", fans, i+1, seqs[a])
		}
	}

	// Rejoiners hammer the queue from other sessions while ticks admit.
	stop := make(chan struct{})
	var rejoins atomic.Int64
	var rw sync.WaitGroup
	stopRejoins := sync.OnceFunc(func() { close(stop); rw.Wait() })
	defer stopRejoins() // also when a check below fails
	for g := range 200 {
		rw.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := rng.Int64N(fans) + 1
				p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: fmt.Sprintf("tab-%d-%d", a, g)})
				switch {
				case err != nil:
					t.Errorf("rejoin(%d): %v", a, err)
					return
				case p.Status == boxoffice.QueueWaiting && p.Sequence != seqs[a]:
					t.Errorf("rejoin(%d) moved the place from sequence %d to %d", a, seqs[a], p.Sequence)
					return
				case p.Status != boxoffice.QueueWaiting && p.Status != boxoffice.QueueAdmitted:
					t.Errorf("rejoin(%d) = %+v, want waiting or admitted", a, p)
					return
				}
				rejoins.Add(1)
			}
		})
	}
	s := admission(37)
	var admitted []int64
	for tick := int64(1); len(admitted) < fans; tick++ {
		r := mustAdmit(t, q, s, tick)
		admitted = append(admitted, r.Admitted...)
		if want := min(37, fans-len(admitted)+len(r.Admitted)); len(r.Admitted) != want {
			t.Fatalf("tick %d admitted %d fans, want %d", tick, len(r.Admitted), want)
		}
		if len(admitted) < fans {
			next := order[len(admitted)]
			p, err := q.Position(ctx, queueEvent, next, boxoffice.QueuePlace{})
			if err != nil || p.Position != 1 {
				t.Fatalf("after tick %d the next fan (account %d) is at %+v, %v; want position 1", tick, next, p, err)
			}
		}
	}
	stopRejoins()
	if !slices.Equal(admitted, order) {
		t.Fatalf("admission order differs from join order at index %d", firstDiff(admitted, order))
	}
	if rejoins.Load() < fans {
		t.Fatalf("only %d rejoins ran during admission; the test did not exercise rejoining", rejoins.Load())
	}
}

func firstDiff(a, b []int64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Two instances (two clients on one prefix) race for 60 ticks at rate 50,
// while fans keep joining: every tick admits exactly 50, one admitter per
// tick (its name in the tick's lock, the tick counted once across the
// instances' metrics), nobody twice, nobody lost. The ticks come from the
// test, not a clock.
func TestAdmitter_TwoInstances(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q1 := newQueue(t)
	q2 := sameQueue(t, q1)
	for _, q := range []*store.Queue{q1, q2} {
		m, err := store.NewQueueMetrics(prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		q.Metrics = m
	}
	const rate, ticks = 50, 60
	src := &source{s: []boxoffice.AdmissionSettings{admission(rate)}}
	admitters := []*store.Admitter{{Queue: q1, Source: src, Instance: "host-a:1"}, {Queue: q2, Source: src, Instance: "host-b:2"}}

	seqs := mustJoin(t, q1, 1, rate*ticks+50)
	var mu sync.Mutex
	var late sync.WaitGroup
	defer late.Wait()  // also when a check below fails
	for g := range 4 { // late joiners, through both instances
		late.Go(func() {
			q := []*store.Queue{q1, q2}[g%2]
			for a := int64(10_000 + g*1000); a < int64(10_000+g*1000+500); a++ {
				p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: sess(a)})
				if err != nil {
					t.Errorf("Join(%d): %v", a, err)
					return
				}
				mu.Lock()
				seqs[a] = p.Sequence
				mu.Unlock()
			}
		})
	}

	seen := map[int64]int64{} // account -> tick admitted
	var order []int64
	for tick := int64(1); tick <= ticks; tick++ {
		results := make([]store.TickResult, len(admitters))
		errs := make([]error, len(admitters))
		var wg sync.WaitGroup
		for i, a := range admitters {
			wg.Go(func() { results[i], errs[i] = a.AdmitTick(ctx, tick) })
		}
		wg.Wait()
		locked := 0
		for i, r := range results {
			if errs[i] != nil {
				t.Fatalf("tick %d, admitter %d: %v", tick, i, errs[i])
			}
			if !r.Locked {
				continue
			}
			locked++
			if got, err := q1.Redis.Client.Get(ctx, q1.Redis.Key("admit:lock:%d", tick)).Result(); err != nil || got != admitters[i].Instance {
				t.Fatalf("tick %d's lock = %q, %v; want the name of admitter %d, %q", tick, got, err, i, admitters[i].Instance)
			}
			ar := r.Events[queueEvent]
			if len(ar.Admitted) != rate {
				t.Fatalf("tick %d admitted %d fans, want %d", tick, len(ar.Admitted), rate)
			}
			for _, a := range ar.Admitted {
				if prev, dup := seen[a]; dup {
					t.Fatalf("account %d admitted at tick %d and again at tick %d", a, prev, tick)
				}
				seen[a] = tick
				order = append(order, a)
			}
		}
		if locked != 1 {
			t.Fatalf("tick %d was admitted by %d admitters, want exactly 1", tick, locked)
		}
	}
	late.Wait()
	if got := metricValue(t, q1.Metrics.Ticks) + metricValue(t, q2.Metrics.Ticks); got != ticks {
		t.Errorf("the instances counted %v ticks taken, want %d", got, ticks)
	}

	// The same race without the lock: many goroutines on both clients run the
	// admission script for each tick; it admits each tick once.
	for tick := int64(ticks + 1); tick <= ticks+20; tick++ {
		var done atomic.Int32
		var got []int64
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				r, err := []*store.Queue{q1, q2}[g%2].Admit(ctx, admission(rate), tick, time.Second)
				if err != nil {
					t.Errorf("Admit(tick %d): %v", tick, err)
					return
				}
				if r.Done {
					done.Add(1)
					mu.Lock()
					got = r.Admitted
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if done.Load() != 1 || len(got) != rate {
			t.Fatalf("tick %d: %d scripts admitted (want 1), %d fans (want %d)", tick, done.Load(), len(got), rate)
		}
		for _, a := range got {
			if _, dup := seen[a]; dup {
				t.Fatalf("account %d admitted twice", a)
			}
			seen[a] = tick
		}
		order = append(order, got...)
	}
	checkLine(t, q1, seqs)
	if len(order) != rate*(ticks+20) {
		t.Fatalf("admitted %d fans, want %d", len(order), rate*(ticks+20))
	}
	for i := 1; i < len(order); i++ {
		if seqs[order[i-1]] > seqs[order[i]] {
			t.Fatalf("account %d (sequence %d) was admitted before account %d (sequence %d)",
				order[i-1], seqs[order[i-1]], order[i], seqs[order[i]])
		}
	}
}

// checkLine asserts that every fan in seqs (account -> join sequence) is
// either waiting or holds exactly one live token bound to its session, that
// the admitted fans are exactly the first ones by sequence, that the shared
// figures agree, and that tokens are distinct. It returns the admitted count.
func checkLine(tb testing.TB, q *store.Queue, seqs map[int64]int64) int {
	tb.Helper()
	ctx := context.Background()
	waiting, err := q.Redis.Client.ZRangeWithScores(ctx, q.Redis.Key("queue:{%d}", queueEvent), 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	inLine := map[int64]bool{}
	for _, z := range waiting {
		a, _ := strconv.ParseInt(z.Member.(string), 10, 64)
		if seqs[a] != int64(z.Score) {
			tb.Fatalf("account %d waits with sequence %v, joined with %d", a, z.Score, seqs[a])
		}
		inLine[a] = true
	}
	tokens := map[string]int64{}
	var maxAdmitted, minWaiting int64 = 0, 1 << 62
	for a, seq := range seqs {
		tok, s, ok := entryOf(tb, q, a)
		switch {
		case ok && inLine[a]:
			tb.Fatalf("account %d is in line and holds a token", a)
		case !ok && !inLine[a]:
			tb.Fatalf("account %d (sequence %d) was lost: not in line and no token", a, seq)
		case ok:
			if len(tok) != 22 || s != sess(a) {
				tb.Fatalf("account %d holds token %q bound to %q, want 22 characters bound to %q", a, tok, s, sess(a))
			}
			if other, dup := tokens[tok]; dup {
				tb.Fatalf("accounts %d and %d hold the same token", a, other)
			}
			tokens[tok] = a
			maxAdmitted = max(maxAdmitted, seq)
		default:
			minWaiting = min(minWaiting, seq)
		}
	}
	if maxAdmitted > minWaiting {
		tb.Fatalf("a fan with sequence %d was admitted while sequence %d still waits", maxAdmitted, minWaiting)
	}
	st, err := q.QueueStats(ctx, queueEvent)
	if err != nil {
		tb.Fatal(err)
	}
	if st.AdmittedTotal != int64(len(tokens)) || st.LiveTokens != len(tokens) || st.Waiting != len(waiting) || st.Joined != int64(len(seqs)) {
		tb.Fatalf("QueueStats = %+v, want %d admitted and live, %d waiting, %d joined", st, len(tokens), len(waiting), len(seqs))
	}
	return len(tokens)
}

// The admitter's process is killed (SIGKILL) at random moments over many
// ticks while fans join; two such processes run at once, as two instances.
// Afterwards every fan is still in line, in order, or holds one token.
func TestAdmitter_CrashSafety(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	const fans = 3000
	seqs := make(map[int64]int64, fans)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for a := int64(g + 1); a <= fans; a += 6 {
				p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: sess(a)})
				if err != nil || p.Status != boxoffice.QueueWaiting {
					t.Errorf("Join(%d) = %+v, %v", a, p, err)
					return
				}
				mu.Lock()
				seqs[a] = p.Sequence
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(12)) * time.Millisecond)
			}
		})
	}
	var kills atomic.Int32
	for range 2 {
		wg.Go(func() {
			for range 12 {
				if err := killAdmitterProcess(q.Redis.Prefix, time.Duration(rand.IntN(300))*time.Millisecond); err != nil {
					t.Error(err)
					return
				}
				kills.Add(1)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	admitted := checkLine(t, q, seqs)
	if admitted == 0 || admitted == fans {
		t.Fatalf("%d of %d fans admitted over %d kills; the test needs some admitted and some waiting", admitted, fans, kills.Load())
	}
	t.Logf("%d kills, %d of %d fans admitted", kills.Load(), admitted, fans)
}

// killAdmitterProcess starts TestHelperAdmitterProcess in a child process
// admitting under prefix, and kills it (SIGKILL) after it has admitted for
// about after.
func killAdmitterProcess(prefix string, after time.Duration) error {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAdmitterProcess$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "BOXOFFICE_TEST_ADMITTER_PREFIX="+prefix, "REDIS_URL="+storetest.RedisURL())
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start admitter process: %w", err)
	}
	ready := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == admitterReady {
				close(ready)
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case <-ready:
		time.Sleep(after)
	case <-time.After(30 * time.Second):
		err = errors.New("the admitter process did not start within 30s")
	}
	cmd.Process.Kill()
	<-read
	cmd.Wait()
	return err
}

// admitterReady is the line TestHelperAdmitterProcess prints when it runs.
const admitterReady = "admitter ready"

// crashSettings admit 4 fans per 10 ms tick.
var crashSettings = boxoffice.AdmissionSettings{EventID: queueEvent, Rate: 400, TokenTTL: time.Hour}

// TestHelperAdmitterProcess is the admitter process of
// TestAdmitter_CrashSafety, started with BOXOFFICE_TEST_ADMITTER_PREFIX set;
// without it, it does nothing.
func TestHelperAdmitterProcess(t *testing.T) {
	prefix := os.Getenv("BOXOFFICE_TEST_ADMITTER_PREFIX")
	if prefix == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := store.OpenRedis(ctx, storetest.RedisURL(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	a := &store.Admitter{Queue: &store.Queue{Redis: r}, Source: &source{s: []boxoffice.AdmissionSettings{crashSettings}}, Tick: 10 * time.Millisecond}
	fmt.Println(admitterReady)
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// The cap: with cap C, live tokens never exceed C while many admitters run
// ticks concurrently, and an expired token frees its slot.
func TestQueue_Admit_Cap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	const fans, capacity = 40, 5
	s := admission(1000) // 10 per 10 ms tick, twice the cap
	s.MaxShoppers = capacity
	s.TokenTTL = 150 * time.Millisecond
	mustJoin(t, q, 1, fans)
	q2 := sameQueue(t, q)

	keys := make([]string, 0, fans)
	for a := int64(1); a <= fans; a++ {
		keys = append(keys, q.Redis.Key("entry:{%d}:%d", queueEvent, a))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var samples atomic.Int64
	wg.Go(func() { // counts existing entry keys atomically (MULTI), all the time
		for {
			select {
			case <-done:
				return
			default:
			}
			cmds, err := q.Redis.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range keys {
					p.Exists(ctx, k)
				}
				return nil
			})
			if err != nil {
				t.Errorf("count tokens: %v", err)
				return
			}
			live := 0
			for _, c := range cmds {
				live += int(c.(*redis.IntCmd).Val())
			}
			if live > capacity {
				t.Errorf("%d live entry tokens, cap %d", live, capacity)
				return
			}
			samples.Add(1)
		}
	})
	var tick atomic.Int64
	var admitted atomic.Int64
	deadline := time.Now().Add(30 * time.Second)
	for g := range 50 {
		wg.Go(func() {
			for admitted.Load() < fans && time.Now().Before(deadline) && !t.Failed() {
				r, err := []*store.Queue{q, q2}[g%2].Admit(ctx, s, tick.Add(1), 10*time.Millisecond)
				if err != nil {
					t.Errorf("Admit: %v", err)
					return
				}
				if r.Live > capacity {
					t.Errorf("Admit reports %d live tokens, cap %d", r.Live, capacity)
					return
				}
				admitted.Add(int64(len(r.Admitted)))
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	for admitted.Load() < fans && time.Now().Before(deadline) && !t.Failed() {
		time.Sleep(10 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	if admitted.Load() != fans {
		t.Fatalf("%d of %d fans admitted: expired tokens did not free their slots", admitted.Load(), fans)
	}
	if samples.Load() < 10 {
		t.Fatalf("only %d samples of live tokens; the test did not watch the cap", samples.Load())
	}
	st, err := q.QueueStats(ctx, queueEvent)
	if err != nil || st.AdmittedTotal != fans || st.LiveTokens > capacity {
		t.Fatalf("QueueStats = %+v, %v; want %d admitted, at most %d live", st, err, fans, capacity)
	}
}

// Binding (rule 5): an entry works only for the account and the session its
// token was issued to, and only while it lives.
func TestQueue_CheckEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	s := admission(2)
	s.TokenTTL = 2 * time.Second
	mustJoin(t, q, 1, 3)
	mustAdmit(t, q, s, 1)
	tokA, ttl, err := q.EntryToken(ctx, queueEvent, 1, sess(1))
	if err != nil || len(tokA) != 22 || ttl <= 0 || ttl > s.TokenTTL {
		t.Fatalf("EntryToken = %q, %v, %v; want a 22-character token with TTL in (0, %v]", tokA, ttl, err, s.TokenTTL)
	}
	tokB, _, err := q.EntryToken(ctx, queueEvent, 2, sess(2))
	if err != nil || tokB == tokA {
		t.Fatalf("EntryToken(2) = %q, %v; want another token", tokB, err)
	}

	t.Run("OK", func(t *testing.T) {
		if err := q.CheckEntry(ctx, queueEvent, 1, sess(1)); err != nil {
			t.Fatalf("CheckEntry: %v", err)
		}
	})
	for _, tt := range []struct {
		name    string
		acct    int64
		session string
		reason  string
	}{
		{"ErrOtherSession", 1, "sid-stolen", boxoffice.ReasonOtherSession},
		{"ErrOtherAccountsSession", 1, sess(2), boxoffice.ReasonOtherSession},
		{"ErrAccountNeverAdmitted", 99, sess(1), boxoffice.ReasonNone},
		{"ErrAccountStillWaiting", 3, sess(3), boxoffice.ReasonNone},
		{"ErrOtherEvent", 1, sess(1), boxoffice.ReasonNone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := int64(queueEvent)
			if tt.name == "ErrOtherEvent" {
				e = queueEvent + 1
			}
			wantCodeReason(t, q.CheckEntry(ctx, e, tt.acct, tt.session), boxoffice.ENOENTRYTOKEN, tt.reason)
		})
	}
	t.Run("ErrEntryTokenOtherSession", func(t *testing.T) {
		_, _, err := q.EntryToken(ctx, queueEvent, 1, sess(2))
		wantCodeReason(t, err, boxoffice.ENOENTRYTOKEN, boxoffice.ReasonOtherSession)
		_, _, err = q.EntryToken(ctx, queueEvent, 3, sess(3))
		wantCodeReason(t, err, boxoffice.ENOENTRYTOKEN, boxoffice.ReasonNone)
	})

	// Hundreds of checks at once, of every pairing: only the right ones pass.
	t.Run("Concurrent", func(t *testing.T) {
		creds := []struct {
			acct    int64
			session string
		}{{1, sess(1)}, {2, sess(2)}}
		var wg sync.WaitGroup
		var passed atomic.Int64
		for g := range 400 {
			wg.Go(func() {
				a, b := creds[g%2], creds[(g/2)%2]
				err := q.CheckEntry(ctx, queueEvent, a.acct, b.session)
				right := a == b
				switch {
				case right && err != nil:
					t.Errorf("CheckEntry(%d, its session %s): %v", a.acct, b.session, err)
				case !right && boxoffice.ErrorCode(err) != boxoffice.ENOENTRYTOKEN:
					t.Errorf("CheckEntry(%d, the session %s of %d) = %v, want %s", a.acct, b.session, b.acct, err, boxoffice.ENOENTRYTOKEN)
				case right:
					passed.Add(1)
				}
			})
		}
		wg.Wait()
		if passed.Load() != 200 {
			t.Fatalf("%d checks passed, want 200", passed.Load())
		}
	})

	t.Run("ErrExpired", func(t *testing.T) {
		time.Sleep(ttl + 50*time.Millisecond)
		wantCodeReason(t, q.CheckEntry(ctx, queueEvent, 1, sess(1)), boxoffice.ENOENTRYTOKEN, boxoffice.ReasonExpired)
		_, _, err := q.EntryToken(ctx, queueEvent, 1, sess(1))
		wantCodeReason(t, err, boxoffice.ENOENTRYTOKEN, boxoffice.ReasonExpired)
		_, err = q.Position(ctx, queueEvent, 1, boxoffice.QueuePlace{})
		wantCodeReason(t, err, boxoffice.ENOTINQUEUE, boxoffice.ReasonExpired)
		// Joining again gives a new place at the back of the line.
		p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 1, SessionKey: sess(1)})
		if err != nil || p.Status != boxoffice.QueueWaiting || p.Sequence != 4 || p.Position != 2 {
			t.Fatalf("Join after expiry = %+v, %v; want waiting with sequence 4 at position 2", p, err)
		}
	})
}

// Many sessions of one account rejoin at once, before admission and again
// while admitted: each time the turn ends up in exactly one session, the one
// whose rejoin came last, its token works in no other session, and the
// rejoins never move the turn's end.
func TestQueue_EntryToken_ConcurrentRejoin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const devices = 100
	sessions := make([]string, devices)
	for g := range sessions {
		sessions[g] = fmt.Sprintf("device-%d", g)
	}
	all := append(slices.Clone(sessions), sess(1))
	rejoinAll := func(t *testing.T, q *store.Queue, want string) {
		t.Helper()
		var wg sync.WaitGroup
		for _, session := range sessions {
			wg.Go(func() {
				if p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 1, SessionKey: session}); err != nil || p.Status != want {
					t.Errorf("Join from %s = %+v, %v; want %s", session, p, err, want)
				}
			})
		}
		wg.Wait()
	}
	for round := range 5 {
		t.Run(fmt.Sprintf("Round%d", round), func(t *testing.T) {
			q := newQueue(t)
			key := q.Redis.Key("entry:{%d}:%d", queueEvent, 1)
			mustJoin(t, q, 1, 1)
			rejoinAll(t, q, boxoffice.QueueWaiting)
			mustAdmit(t, q, admission(1), 1)
			admitted := oneTurn(t, q, all)
			expires, err := q.Redis.Client.PExpireTime(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}

			rejoinAll(t, q, boxoffice.QueueAdmitted)
			moved := oneTurn(t, q, all)
			if moved == admitted {
				t.Fatal("the token survived rejoins from other sessions")
			}
			if got, err := q.Redis.Client.PExpireTime(ctx, key).Result(); err != nil || got != expires {
				t.Fatalf("the rejoins moved the turn's end from %v to %v (%v)", expires, got, err)
			}
		})
	}
}

// TestQueue_Join_LostBindingStorm attacks the join's use of the session
// bindings: with queue:sess:{e} lost, the fans in line rejoin from two
// sessions each while as many new fans join, all at once, round after
// round. Every fan in line keeps its sequence, the new fans get the next
// sequences with no gap or tie, and each account has one place.
func TestQueue_Join_LostBindingStorm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const fans = 100
	for round := range 5 {
		q := newQueue(t)
		mustJoin(t, q, 1, fans)
		if err := q.Redis.Client.Del(ctx, q.Redis.Key("queue:sess:{%d}", queueEvent)).Err(); err != nil {
			t.Fatal(err)
		}
		seqs := make([]int64, 2*fans+1)
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		join := func(a int64, session string) {
			<-start
			p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: session})
			if err != nil || p.Status != boxoffice.QueueWaiting {
				t.Errorf("round %d: Join(%d, %s) = %+v, %v", round, a, session, p, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if seqs[a] != 0 && seqs[a] != p.Sequence {
				t.Errorf("round %d: account %d got sequences %d and %d", round, a, seqs[a], p.Sequence)
			}
			seqs[a] = p.Sequence
		}
		for a := int64(1); a <= fans; a++ {
			wg.Go(func() { join(a, sess(a)) })
			wg.Go(func() { join(a, "other-device") })
			wg.Go(func() { join(fans+a, sess(fans+a)) })
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		for a := int64(1); a <= fans; a++ {
			if seqs[a] != a {
				t.Fatalf("round %d: account %d in line has sequence %d after rejoining, want %d", round, a, seqs[a], a)
			}
		}
		news := slices.Sorted(slices.Values(seqs[fans+1:]))
		for i, s := range news {
			if s != int64(fans+i+1) {
				t.Fatalf("round %d: the new fans' sequences are not %d..%d without gaps or ties: %v", round, fans+1, 2*fans, news)
			}
		}
		if n, err := q.Redis.Client.ZCard(ctx, q.Redis.Key("queue:{%d}", queueEvent)).Result(); err != nil || n != 2*fans {
			t.Fatalf("round %d: %d places (%v), want %d", round, n, err, 2*fans)
		}
	}
}

// oneTurn asks every session at once for account 1's entry token and checks
// that exactly one gets it, the session the entry is bound to in Redis, that
// the entry works there and in no other session; it returns the token.
func oneTurn(t *testing.T, q *store.Queue, sessions []string) string {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]string{}
	for _, session := range sessions {
		wg.Go(func() {
			tok, _, err := q.EntryToken(ctx, queueEvent, 1, session)
			switch {
			case err == nil:
				mu.Lock()
				got[session] = tok
				mu.Unlock()
				if err := q.CheckEntry(ctx, queueEvent, 1, session); err != nil {
					t.Errorf("CheckEntry in %s, which got the token: %v", session, err)
				}
			case boxoffice.NoEntryReason(err) != boxoffice.ReasonOtherSession:
				t.Errorf("EntryToken(%s): %v, want reason %s", session, err, boxoffice.ReasonOtherSession)
			}
		})
	}
	wg.Wait()
	if len(got) != 1 {
		t.Fatalf("%d sessions got the token, want 1", len(got))
	}
	_, bound, _ := entryOf(t, q, 1)
	tok, ok := got[bound]
	if !ok {
		t.Fatalf("the token went to %v, but the entry is bound to %s", got, bound)
	}
	for _, other := range sessions {
		if other != bound && q.CheckEntry(ctx, queueEvent, 1, other) == nil {
			t.Fatalf("the entry of %s works from %s", bound, other)
		}
	}
	return tok
}

// Positions answers every connected fan in one round trip, whatever their
// number, and agrees with Position.
// EntrySessions names the session each admitted account's token is bound
// to, a rejoin from another browser moving it, and "" for an account in
// line or one never seen.
func TestQueue_EntrySessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	mustJoin(t, q, 1, 4)
	if _, err := q.Admit(ctx, admission(2), 1, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 2, SessionKey: "sid-2-phone"}); err != nil {
		t.Fatal(err)
	}
	got, err := q.EntrySessions(ctx, queueEvent, []int64{1, 2, 3, 4, 99})
	want := map[int64]string{1: sess(1), 2: "sid-2-phone", 3: "", 4: "", 99: ""}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("EntrySessions = %v, %v; want %v", got, err, want)
	}
}

func TestQueue_Positions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	seqs := mustJoin(t, q, 1, 3000)
	s := admission(500)
	mustAdmit(t, q, s, 1)
	mustAdmit(t, q, s, 2)
	counted := sameQueue(t, q)
	hook := &countHook{}
	counted.Redis.Client.AddHook(hook)
	fans := map[int64]string{}
	for a := int64(1); a <= 3000; a++ {
		fans[a] = ""
	}
	fans[5000] = ""
	fans[5001] = "an-old-epoch"
	if _, err := counted.Position(ctx, queueEvent, 1, boxoffice.QueuePlace{}); err != nil { // warms the connection and the script up
		t.Fatal(err)
	}
	hook.single.Store(0)
	hook.pipelines.Store(0)
	got, err := counted.Positions(ctx, queueEvent, fans)
	if err != nil {
		t.Fatal(err)
	}
	if c, p := hook.single.Load(), hook.pipelines.Load(); c != 1 || p != 0 {
		t.Fatalf("Positions of %d fans sent %d commands and %d pipelines, want 1 command (the script)", len(fans), c, p)
	}
	for a := int64(1); a <= 1000; a++ {
		if got[a].Status != boxoffice.QueueAdmitted {
			t.Fatalf("Positions[%d] = %+v, want admitted", a, got[a])
		}
	}
	for a := int64(1001); a <= 3000; a++ {
		p := got[a]
		if p.Status != boxoffice.QueueWaiting || int64(p.Position) != seqs[a]-1000 || p.Ahead != p.Position-1 || p.Sequence != seqs[a] {
			t.Fatalf("Positions[%d] = %+v, want waiting at %d", a, p, seqs[a]-1000)
		}
		if want := time.Duration((p.Position+499)/500) * time.Second; p.ETA != want {
			t.Fatalf("Positions[%d].ETA = %v, want %v at 500 per tick", a, p.ETA, want)
		}
	}
	if got[5000].Status != boxoffice.QueueNotInQueue || got[5001].Status != boxoffice.QueueReset {
		t.Fatalf("unknown fans: %+v and %+v, want not_in_queue and reset", got[5000], got[5001])
	}
	for _, a := range []int64{1, 1500, 3000} {
		p, err := q.Position(ctx, queueEvent, a, boxoffice.QueuePlace{})
		if err != nil || p != got[a] {
			t.Fatalf("Position(%d) = %+v, %v; Positions gave %+v", a, p, err, got[a])
		}
	}
	if m, err := q.Positions(ctx, queueEvent, nil); err != nil || len(m) != 0 {
		t.Fatalf("Positions(none) = %v, %v; want an empty map", m, err)
	}
}

// Rule 7: when Redis loses the waiting room, a fan who had a place is told
// "reset", never an error, and joining again works.
func TestQueue_Reset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	first, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 1, SessionKey: sess(1)})
	if err != nil {
		t.Fatal(err)
	}
	mustJoin(t, q, 2, 3)
	mustAdmit(t, q, admission(1), 1)
	if err := q.CheckEntry(ctx, queueEvent, 1, sess(1)); err != nil {
		t.Fatal(err)
	}

	// What FLUSHALL does to this test's keys.
	keys, err := storetest.Keys(ctx, q.Redis, q.Redis.Prefix+"*")
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys under the prefix: %v, %v", keys, err)
	}
	if err := storetest.DeleteKeys(ctx, q.Redis, keys); err != nil {
		t.Fatal(err)
	}

	for _, a := range []int64{1, 2} {
		p, err := q.Position(ctx, queueEvent, a, boxoffice.QueuePlace{Epoch: first.Epoch})
		if err != nil || p.Status != boxoffice.QueueReset {
			t.Fatalf("Position(%d) after the loss = %+v, %v; want reset", a, p, err)
		}
	}
	_, err = q.Position(ctx, queueEvent, 2, boxoffice.QueuePlace{})
	wantCodeReason(t, err, boxoffice.ENOTINQUEUE, boxoffice.ReasonNone)
	wantCodeReason(t, q.CheckEntry(ctx, queueEvent, 1, sess(1)), boxoffice.ENOENTRYTOKEN, boxoffice.ReasonNone)
	if st, err := q.QueueStats(ctx, queueEvent); err != nil || st != (boxoffice.QueueStats{}) {
		t.Fatalf("QueueStats after the loss = %+v, %v; want zeros", st, err)
	}

	// A new line starts; fans of the old one are still told "reset".
	p4, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 4, SessionKey: sess(4)})
	if err != nil || p4.Position != 1 || p4.Epoch == first.Epoch {
		t.Fatalf("Join after the loss = %+v, %v; want position 1 in a new epoch", p4, err)
	}
	if p, err := q.Position(ctx, queueEvent, 3, boxoffice.QueuePlace{Epoch: first.Epoch}); err != nil || p.Status != boxoffice.QueueReset {
		t.Fatalf("Position of an old fan in the new line = %+v, %v; want reset", p, err)
	}
	p3, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 3, SessionKey: sess(3)})
	if err != nil || p3.Position != 2 {
		t.Fatalf("rejoin after the loss = %+v, %v; want position 2", p3, err)
	}
	if p, err := q.Position(ctx, queueEvent, 3, boxoffice.QueuePlace{Epoch: p3.Epoch}); err != nil || p != p3 {
		t.Fatalf("Position after rejoining = %+v, %v; want %+v", p, err, p3)
	}
	r := mustAdmit(t, q, admission(5), 1)
	if !slices.Equal(r.Admitted, []int64{4, 3}) {
		t.Fatalf("first admission of the new line admitted %v, want [4 3]", r.Admitted)
	}
}

func TestQueue_QueueStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	mustJoin(t, q, 1, 100)
	s := admission(20)
	s.MaxShoppers = 50
	for tick := int64(1); tick <= 3; tick++ {
		mustAdmit(t, q, s, tick)
	}
	st, err := q.QueueStats(ctx, queueEvent)
	if err != nil {
		t.Fatal(err)
	}
	want := boxoffice.QueueStats{Waiting: 50, Joined: 100, AdmittedTotal: 50, LiveTokens: 50, Rate: 20}
	// Ticks 1..3 lie far in the past of Redis's clock, so no rate was achieved lately.
	if st != want {
		t.Fatalf("QueueStats = %+v, want %+v", st, want)
	}
}

func TestAdmitter_Run(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("InjectedTicks", func(t *testing.T) {
		q := newQueue(t)
		seqs := mustJoin(t, q, 1, 100)
		ticks := make(chan int64)
		a := &store.Admitter{Queue: q, Source: &source{s: []boxoffice.AdmissionSettings{admission(7)}}, Ticks: ticks}
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		for tick := int64(1); tick <= 5; tick++ {
			ticks <- tick
		}
		ticks <- 5 // a repeated tick admits nobody
		close(ticks)
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if n := checkLine(t, q, seqs); n != 35 {
			t.Fatalf("admitted %d over 5 ticks at 7 per tick, want 35", n)
		}
	})

	t.Run("RedisClock", func(t *testing.T) {
		q := newQueue(t)
		seqs := mustJoin(t, q, 1, 2000)
		ctx, cancel := context.WithCancel(ctx)
		src := &source{s: []boxoffice.AdmissionSettings{admission(200)}}
		var wg sync.WaitGroup
		for _, qq := range []*store.Queue{q, sameQueue(t, q)} {
			a := &store.Admitter{Queue: qq, Source: src, Tick: 20 * time.Millisecond}
			wg.Go(func() {
				if err := a.Run(ctx); err != nil {
					t.Errorf("Run: %v", err)
				}
			})
		}
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			st, err := q.QueueStats(ctx, queueEvent)
			if err != nil {
				t.Fatal(err)
			}
			if st.AdmittedTotal >= 100 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		wg.Wait()
		n := checkLine(t, q, seqs)
		if n < 100 || n%4 != 0 {
			t.Fatalf("admitted %d, want at least 100 in batches of 4", n)
		}
	})
}

func TestQueueMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := store.NewQueueMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.NewQueueMetrics(reg); err == nil {
		t.Fatal("registering the metrics twice on one registry succeeded, want an error")
	}
	q := newQueue(t)
	q.Metrics = m
	var wg sync.WaitGroup
	for a := range int64(300) {
		wg.Go(func() {
			for range 3 { // rejoins are not joins
				if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a % 100, SessionKey: sess(a)}); err != nil {
					t.Errorf("Join: %v", err)
				}
			}
		})
	}
	wg.Wait()
	mustAdmit(t, q, admission(30), 1)
	label := strconv.Itoa(queueEvent)
	for name, tt := range map[string]struct {
		c    prometheus.Metric
		want float64
	}{
		"joins":       {m.Joins.WithLabelValues(label), 100},
		"admissions":  {m.Admissions.WithLabelValues(label), 30},
		"waiting":     {m.Waiting.WithLabelValues(label), 70},
		"live tokens": {m.LiveTokens.WithLabelValues(label), 30},
	} {
		if got := metricValue(t, tt.c); got != tt.want {
			t.Errorf("%s = %v, want %v", name, got, tt.want)
		}
	}
}

func metricValue(tb testing.TB, m prometheus.Metric) float64 {
	tb.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		tb.Fatal(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

func BenchmarkQueue_Join(b *testing.B) {
	ctx := context.Background()
	q := newQueue(b)
	var next atomic.Int64
	b.SetParallelism(8) // many fans at once: 8 goroutines per core
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a := next.Add(1)
			if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: "sid"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkQueue_Join_Sale is BenchmarkQueue_Join in a sale's steady
// state: the queue's figures carry the records of RateWindow admitted
// ticks, as they do once admission runs, and every fan joins twice (a
// place, then the same place again), from one instance, with the event's
// limit set as the handler sends it (so the script reads bought:{e}).
func BenchmarkQueue_Join_Sale(b *testing.B) {
	ctx := context.Background()
	q := newQueue(b)
	mustJoin(b, q, 1, 5*boxoffice.RateWindow)
	for tick := range int64(boxoffice.RateWindow) {
		if _, err := q.Admit(ctx, admission(5), tick+1, time.Second); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a := 1000 + next.Add(1)/2
			if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: "sid", Limit: 4}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkQueue_Position(b *testing.B) {
	ctx := context.Background()
	q := newQueue(b)
	const fans = 10_000
	joinMany(b, q, fans)
	b.SetParallelism(8) // many fans at once: 8 goroutines per core
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		for pb.Next() {
			if _, err := q.Position(ctx, queueEvent, rng.Int64N(fans)+1, boxoffice.QueuePlace{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkQueue_Positions measures the SSE fan-out: one call per tick for
// 1,000 connected fans.
func BenchmarkQueue_Positions(b *testing.B) {
	ctx := context.Background()
	q := newQueue(b)
	const fans = 10_000
	joinMany(b, q, fans)
	batch := map[int64]string{}
	for a := int64(1); a <= fans; a += fans / 1000 {
		batch[a] = ""
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := q.Positions(ctx, queueEvent, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "fans/s")
}

// joinMany joins accounts 1..n of queueEvent concurrently.
func joinMany(b *testing.B, q *store.Queue, n int64) {
	b.Helper()
	var wg sync.WaitGroup
	for g := range int64(16) {
		wg.Go(func() {
			for a := g + 1; a <= n; a += 16 {
				if _, err := q.Join(context.Background(), boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: sess(a)}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// The admission script gets the head's entry keys from a read made before it
// runs: ticks racing at once move the head between one admitter's read and
// its script, which must then change nothing and let Admit read again, so
// that every fan is admitted once, in line order, with a token bound to the
// session of their place.
func TestQueue_Admit_RacingTicks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	q2 := sameQueue(t, q)
	const fans, ticks = 600, 100
	seqs := mustJoin(t, q, 1, fans)
	s := admission(8) // 8 fans per 1 s tick
	results := make([]store.AdmitResult, ticks)
	errs := make([]error, ticks)
	storetest.AtOnce(ticks, func(i int) {
		results[i], errs[i] = []*store.Queue{q, q2}[i%2].Admit(ctx, s, int64(i+1), time.Second)
	})
	var admitted []int64
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("Admit(tick %d): %v", i+1, errs[i])
		}
		admitted = append(admitted, r.Admitted...)
	}
	if len(admitted) == 0 {
		t.Fatal("no tick admitted anybody")
	}
	seen := make(map[int64]bool, len(admitted))
	for _, a := range admitted {
		if seen[a] {
			t.Fatalf("fan %d admitted twice", a)
		}
		seen[a] = true
		tok, sid, ok := entryOf(t, q, a)
		if !ok || tok == "" || sid != sess(a) {
			t.Fatalf("fan %d admitted with entry %q|%q (exists %v), want a token bound to %q", a, tok, sid, ok, sess(a))
		}
	}
	for a := int64(1); a <= fans; a++ {
		if _, _, ok := entryOf(t, q, a); ok != seen[a] {
			t.Fatalf("fan %d has an entry key %v, admitted %v", a, ok, seen[a])
		}
	}
	// The admitted fans are the first of the line: no one behind a waiting fan got in.
	for a := int64(1); a <= int64(len(admitted)); a++ {
		if !seen[a] {
			t.Fatalf("fan %d (sequence %d) still waits while %d fans were admitted", a, seqs[a], len(admitted))
		}
	}
	st, err := q.QueueStats(ctx, queueEvent)
	if err != nil || st.Waiting != fans-len(admitted) || st.AdmittedTotal != int64(len(admitted)) {
		t.Fatalf("QueueStats = %+v, %v; want %d waiting, %d admitted", st, err, fans-len(admitted), len(admitted))
	}
}

// A join places a fan with the figures its instance read in the current
// tick window, but never with another line's epoch or a stale sold-out
// mark: when Redis's differ from the instance's, the answer has Redis's.
func TestQueue_Join_KeptFigures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	at := time.Now()
	q.Redis.Now = func() time.Time { return at } // one tick window throughout
	mustJoin(t, q, 1, 2)                         // the first join reads the figures, and q keeps them
	p3, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 3, SessionKey: sess(3)})
	if err != nil || p3.Status != boxoffice.QueueWaiting || p3.Position != 3 || p3.Epoch == "" {
		t.Fatalf("Join(3) = %+v, %v; want waiting at 3", p3, err)
	}

	// Redis loses the line while q keeps its figures of the window.
	keys, err := storetest.Keys(ctx, q.Redis, q.Redis.Prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	if err := storetest.DeleteKeys(ctx, q.Redis, keys); err != nil {
		t.Fatal(err)
	}
	p4, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 4, SessionKey: sess(4)})
	if err != nil || p4.Status != boxoffice.QueueWaiting || p4.Position != 1 || p4.Epoch == p3.Epoch || p4.Epoch == "" {
		t.Fatalf("Join(4) after the loss = %+v, %v; want waiting at 1 in a new epoch (not %q)", p4, err, p3.Epoch)
	}

	// The line sells out; q's figures of the window do not say so.
	if err := q.Redis.Client.HSet(ctx, q.Redis.Key("queue:stats:{%d}", queueEvent), "sold_out", "1").Err(); err != nil {
		t.Fatal(err)
	}
	p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 4, SessionKey: sess(4)})
	if err != nil || p.Status != boxoffice.QueueSoldOut || p.Epoch != p4.Epoch {
		t.Fatalf("Join(4) again after the sell-out = %+v, %v; want sold out in epoch %q", p, err, p4.Epoch)
	}
}

// A fan who already bought the limit gets no place and no turn, however
// many tabs ask at once; the fans below the limit beside them all get one.
func TestQueue_Join_LimitReached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	const limit = 5
	bought := q.Redis.Key("bought:{%d}", queueEvent)
	for a := int64(1); a <= 100; a++ {
		if err := q.Redis.Client.HSet(ctx, bought, a, limit-1+int(a%2)).Err(); err != nil { // odd accounts own the limit
			t.Fatal(err)
		}
	}
	for round := range 3 {
		errs := make([]error, 300)
		storetest.AtOnce(300, func(i int) {
			a := int64(i%100 + 1)
			_, errs[i] = q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: fmt.Sprintf("tab-%d", i), Limit: limit})
		})
		for i, err := range errs {
			a := int64(i%100 + 1)
			want := ""
			if a%2 == 1 {
				want = boxoffice.ELIMITREACHED
			}
			if code := boxoffice.ErrorCode(err); code != want {
				t.Fatalf("round %d: Join(%d) error %v, want code %q", round, a, err, want)
			}
		}
		st, err := q.QueueStats(ctx, queueEvent)
		if err != nil || st.Waiting != 50 {
			t.Fatalf("round %d: %d waiting (%v), want the 50 accounts below the limit", round, st.Waiting, err)
		}
	}
	// After an admission, an account at the limit is still refused, and one
	// below it is told of its turn.
	mustAdmit(t, q, admission(1000), 1)
	if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 1, SessionKey: "late", Limit: limit}); boxoffice.ErrorCode(err) != boxoffice.ELIMITREACHED {
		t.Fatalf("Join of an account at the limit = %v, want %s", err, boxoffice.ELIMITREACHED)
	}
	if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: 2, SessionKey: sess(2), Limit: limit}); err != nil {
		t.Fatalf("Join below the limit: %v", err)
	}
}

// headMover is a go-redis hook that, after the first ZRANGE of the line's
// head it sees, runs move: another admitter taking the head in between.
type headMover struct {
	once sync.Once
	move func()
}

func (h *headMover) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *headMover) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *headMover) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "zrange" {
			h.once.Do(h.move)
		}
		return err
	}
}

// When another admitter takes the head between Admit's read of it and its
// script (a tick admitted late by another instance), the script refuses the
// keys it was given, changes nothing, and Admit reads the head again: each
// fan is admitted once, with a token, by one of the two.
func TestQueue_Admit_HeadMoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	other := sameQueue(t, q)
	mustJoin(t, q, 1, 30)
	s := admission(8)
	var first store.AdmitResult
	var firstErr error
	q.Redis.Client.AddHook(&headMover{move: func() { first, firstErr = other.Admit(ctx, s, 1, time.Second) }})
	second, err := q.Admit(ctx, s, 2, time.Second)
	if err != nil || firstErr != nil {
		t.Fatalf("Admit(tick 2) = %v, the other's Admit(tick 1) = %v", err, firstErr)
	}
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(first.Admitted, want) {
		t.Fatalf("the other admitter admitted %v, want %v", first.Admitted, want)
	}
	if want := []int64{9, 10, 11, 12, 13, 14, 15, 16}; !slices.Equal(second.Admitted, want) {
		t.Fatalf("after the head moved, Admit admitted %v, want %v", second.Admitted, want)
	}
	for a := int64(1); a <= 30; a++ {
		tok, sid, ok := entryOf(t, q, a)
		if want := a <= 16; ok != want || (ok && (tok == "" || sid != sess(a))) {
			t.Fatalf("fan %d: entry %q|%q (exists %v), want one bound to %q: %v", a, tok, sid, ok, sess(a), want)
		}
	}
	if st, err := q.QueueStats(ctx, queueEvent); err != nil || st.Waiting != 14 || st.AdmittedTotal != 16 {
		t.Fatalf("QueueStats = %+v, %v; want 14 waiting, 16 admitted", st, err)
	}
}

// The hot scripts sent through the client's autopipeliner (Queue.Pipe, as
// the binary sends them), hundreds at once from two instances: every
// account joins, rejoins and reads its place and its entry in the same
// batches as the others, and each gets its own answer. 300 goroutines, 100
// accounts, 3 rounds: each account has one place, its position agrees with
// a read on the plain client, and after the admission exactly the admitted
// accounts hold an entry bound to their session.
func TestQueue_Pipe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q1 := newQueue(t)
	q2 := sameQueue(t, q1)
	for _, q := range []*store.Queue{q1, q2} {
		pipe, err := q.Redis.AutoPipeline()
		if err != nil {
			t.Fatal(err)
		}
		q.Pipe = pipe
	}
	plain := &store.Queue{Redis: q1.Redis}
	const accounts = 100
	seqs := make([]atomic.Int64, accounts+1)
	for round := range 3 {
		errs := make([]error, 300)
		storetest.AtOnce(300, func(i int) {
			a := int64(i%accounts + 1)
			q := []*store.Queue{q1, q2}[i%2]
			p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: a, SessionKey: sess(a)})
			if err == nil && p.Status != boxoffice.QueueWaiting {
				err = fmt.Errorf("join answered %+v, want waiting", p)
			}
			if err == nil && !seqs[a].CompareAndSwap(0, p.Sequence) && seqs[a].Load() != p.Sequence {
				err = fmt.Errorf("join answered sequence %d, another join of the account %d", p.Sequence, seqs[a].Load())
			}
			if err == nil {
				var got boxoffice.QueuePosition
				got, err = q.Position(ctx, queueEvent, a, boxoffice.QueuePlace{Epoch: p.Epoch})
				if err == nil && (got.Sequence != p.Sequence || got.Status != boxoffice.QueueWaiting) {
					err = fmt.Errorf("position %+v after the join %+v", got, p)
				}
			}
			if err == nil {
				_, _, err = q.EntryToken(ctx, queueEvent, a, sess(a))
				if boxoffice.NoEntryReason(err) == boxoffice.ReasonNone {
					err = nil
				} else {
					err = fmt.Errorf("entry of a fan in line: %v, want reason %s", err, boxoffice.ReasonNone)
				}
			}
			errs[i] = err
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, goroutine %d (account %d): %v", round, i, i%accounts+1, err)
			}
		}
		st, err := q1.QueueStats(ctx, queueEvent)
		if err != nil || st.Waiting != accounts {
			t.Fatalf("round %d: %d waiting (%v), want %d", round, st.Waiting, err, accounts)
		}
	}
	for a := int64(1); a <= accounts; a++ {
		p, err := plain.Position(ctx, queueEvent, a, boxoffice.QueuePlace{})
		if err != nil || p.Sequence != seqs[a].Load() {
			t.Fatalf("account %d: plain Position = %+v, %v; want sequence %d", a, p, err, seqs[a].Load())
		}
	}
	admitted := mustAdmit(t, q1, admission(accounts/2), 1)
	in := map[int64]bool{}
	for _, a := range admitted.Admitted {
		in[a] = true
	}
	errs := make([]error, 300)
	storetest.AtOnce(300, func(i int) {
		a := int64(i%accounts + 1)
		err := []*store.Queue{q1, q2}[i%2].CheckEntry(ctx, queueEvent, a, sess(a))
		switch {
		case in[a] && err != nil:
			errs[i] = fmt.Errorf("admitted account %d: CheckEntry = %v, want nil", a, err)
		case !in[a] && boxoffice.ErrorCode(err) != boxoffice.ENOENTRYTOKEN:
			errs[i] = fmt.Errorf("account %d in line: CheckEntry = %v, want %s", a, err, boxoffice.ENOENTRYTOKEN)
		case in[a]:
			errs[i] = []*store.Queue{q1, q2}[i%2].CheckEntry(ctx, queueEvent, a, "another-session")
			if boxoffice.NoEntryReason(errs[i]) == boxoffice.ReasonOtherSession {
				errs[i] = nil
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(admitted.Admitted) != accounts/2 {
		t.Fatalf("admitted %d, want %d", len(admitted.Admitted), accounts/2)
	}
}

// TestQueue_ScriptsFlushed sends the hot scripts (a join, a position read, an
// entry read; a hold, a best-available hold and a release) to a Redis that
// has forgotten them (SCRIPT FLUSH, as after a restart), on the plain client
// and through the automatic pipeline: each is sent again with EVAL and
// answers as before. On a Redis of its own: a flush of the shared one would
// send every other test's next script call, in every package, through the
// fallback, and the tests that count round trips would count one more.
func TestQueue_ScriptsFlushed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := store.OpenRedis(ctx, storetest.StartRedis(t).URL, storetest.NewRedisPrefix())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	plain := &store.Queue{Redis: r}
	piped := &store.Queue{Redis: plain.Redis}
	pipe, err := plain.Redis.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	piped.Pipe = pipe
	mustJoin(t, plain, 1, 2)
	mustAdmit(t, plain, admission(1), 1)
	for i, q := range []*store.Queue{plain, piped, plain, piped} {
		if err := plain.Redis.Client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		acct := int64(i + 3)
		p, err := q.Join(ctx, boxoffice.JoinRequest{EventID: queueEvent, AccountID: acct, SessionKey: sess(acct)})
		if err != nil || p.Status != boxoffice.QueueWaiting || p.Position != i+2 {
			t.Fatalf("client %d: Join = %+v, %v; want waiting at position %d", i, p, err, i+2)
		}
		if err := plain.Redis.Client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := q.Position(ctx, queueEvent, acct, boxoffice.QueuePlace{}); err != nil || got.Sequence != p.Sequence {
			t.Fatalf("client %d: Position = %+v, %v; want sequence %d", i, got, err, p.Sequence)
		}
		if err := plain.Redis.Client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := q.CheckEntry(ctx, queueEvent, 1, sess(1)); err != nil {
			t.Fatalf("client %d: CheckEntry of the admitted fan = %v, want nil", i, err)
		}
	}

	db := storetest.MustOpenDB(t)
	ev := storetest.NewEvent(t, db, 16)
	plainHolds, err := store.NewHolds(db, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	pipedHolds, err := store.NewHolds(db, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	pipedHolds.Pipe = pipe
	flush := func() {
		t.Helper()
		if err := r.Client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i, h := range []*store.Holds{plainHolds, pipedHolds, plainHolds, pipedHolds} {
		req := boxoffice.HoldRequest{EventID: ev.ID, AccountID: int64(100 + i), Limit: 4, TTL: time.Minute}
		flush()
		seat := ev.S[i]
		if res, err := h.Hold(ctx, req, []string{seat}); err != nil || !slices.Equal(res.Held, []string{seat}) {
			t.Fatalf("client %d: Hold(%s) = %+v, %v; want it held", i, seat, res, err)
		}
		flush()
		best, err := h.HoldBest(ctx, req, "R", 1)
		if err != nil || len(best.Held) != 1 || !slices.Equal(best.Mine.Mine, slices.Sorted(slices.Values([]string{seat, best.Held[0]}))) {
			t.Fatalf("client %d: HoldBest = %+v, %v; want one R seat held besides %s", i, best, err, seat)
		}
		flush()
		mine, err := h.Release(ctx, boxoffice.Shopper{EventID: ev.ID, AccountID: req.AccountID}, seat)
		if err != nil || !slices.Equal(mine.Mine, best.Held) {
			t.Fatalf("client %d: Release(%s) = %+v, %v; want only %v left held", i, seat, mine, err, best.Held)
		}
	}
}
