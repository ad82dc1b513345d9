package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/redis/go-redis/v9"
)

// scriptKeys is a go-redis hook that records the number of keys of every
// script run.
type scriptKeys struct {
	mu   sync.Mutex
	runs []int
}

func (h *scriptKeys) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptKeys) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n, ok := scriptKeyCount(cmd); ok {
			h.mu.Lock()
			h.runs = append(h.runs, n)
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (h *scriptKeys) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// scriptKeyCount returns the number of keys cmd declares when it runs a
// script (EVAL or EVALSHA).
func scriptKeyCount(cmd redis.Cmder) (int, bool) {
	args := cmd.Args()
	if name := cmd.Name(); (name != "eval" && name != "evalsha") || len(args) < 3 {
		return 0, false
	}
	n, err := strconv.Atoi(fmt.Sprint(args[2]))
	return n, err == nil
}

// A tick's batch of 1,000 fans is admitted whole, in line order, by runs of
// the admission script that each declare at most store.AdmitPart fans' keys
// (beside the line's four), so that Redis runs no long script while the
// other fans' requests wait.
func TestQueue_Admit_InParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	const fans = 1000
	mustJoin(t, q, 1, fans)
	hook := &scriptKeys{}
	q.Redis.Client.AddHook(hook)

	r, err := q.Admit(ctx, admission(fans), 1, time.Second)
	if err != nil || !r.Done || len(r.Admitted) != fans || r.Waiting != 0 || r.Live != fans {
		t.Fatalf("Admit = done %v, %d admitted, %d waiting, %d live, %v; want all %d admitted", r.Done, len(r.Admitted), r.Waiting, r.Live, err, fans)
	}
	for i, a := range r.Admitted {
		if a != int64(i+1) {
			t.Fatalf("admitted[%d] = fan %d, want %d: the line's order", i, a, i+1)
		}
		if tok, sid, ok := entryOf(t, q, a); !ok || tok == "" || sid != sess(a) {
			t.Fatalf("fan %d admitted with entry %q|%q (exists %v)", a, tok, sid, ok)
		}
	}
	parts := 0
	for _, keys := range hook.runs {
		if keys > 4+store.AdmitPart {
			t.Errorf("a script ran with %d keys, want at most %d: the line's 4 and a part's fans", keys, 4+store.AdmitPart)
		}
		if keys > 4 {
			parts++
		}
	}
	if want := fans / store.AdmitPart; parts < want {
		t.Errorf("%d runs of the admission script admitted fans, want at least %d parts of %d", parts, want, store.AdmitPart)
	}
	st, err := q.QueueStats(ctx, queueEvent)
	if err != nil || st.Waiting != 0 || st.AdmittedTotal != fans {
		t.Fatalf("QueueStats = %+v, %v; want 0 waiting, %d admitted", st, err, fans)
	}
	// The tick is done: running it again admits nobody.
	mustJoin(t, q, fans+1, fans+10)
	if again, err := q.Admit(ctx, admission(fans), 1, time.Second); err != nil || again.Done || len(again.Admitted) != 0 {
		t.Fatalf("Admit(tick 1) again = %+v, %v; want not done, nobody admitted", again, err)
	}
}

// Admitters racing on the same tick, its batch larger than a part, admit
// the batch exactly once between them: in each of 12 rounds, 16 calls on two
// instances admit tick i's 500 fans out of 700 waiting, the first 500 of
// the line, each once and with a token; a tick's repeat after the next tick
// admits nobody.
func TestQueue_Admit_PartsRacing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	q2 := sameQueue(t, q)
	const rounds, calls, batch, joining = 12, 16, 500, 700
	s := admission(batch)
	next := int64(1) // the first fan of the line
	for round := int64(1); round <= rounds; round++ {
		mustJoin(t, q, (round-1)*joining+1, round*joining)
		results := make([]store.AdmitResult, calls)
		errs := make([]error, calls)
		storetest.AtOnce(calls, func(i int) {
			results[i], errs[i] = []*store.Queue{q, q2}[i%2].Admit(ctx, s, round, time.Second)
		})
		seen := map[int64]bool{}
		for i, r := range results {
			if errs[i] != nil {
				t.Fatalf("round %d: Admit: %v", round, errs[i])
			}
			for _, a := range r.Admitted {
				if seen[a] {
					t.Fatalf("round %d: fan %d admitted twice", round, a)
				}
				seen[a] = true
			}
		}
		if len(seen) != batch {
			t.Fatalf("round %d: %d fans admitted by tick %d, want its batch of %d", round, len(seen), round, batch)
		}
		for a := next; a < next+batch; a++ {
			if !seen[a] {
				t.Fatalf("round %d: fan %d, in line before others admitted, was not admitted", round, a)
			}
			if tok, sid, ok := entryOf(t, q, a); !ok || tok == "" || sid != sess(a) {
				t.Fatalf("round %d: fan %d admitted with entry %q|%q (exists %v)", round, a, tok, sid, ok)
			}
		}
		next += batch
		if round > 1 {
			if late, err := q2.Admit(ctx, s, round-1, time.Second); err != nil || late.Done || len(late.Admitted) != 0 {
				t.Fatalf("round %d: Admit(tick %d) after tick %d = %+v, %v; want nobody admitted", round, round-1, round, late, err)
			}
		}
	}
	st, err := q.QueueStats(ctx, queueEvent)
	if err != nil || st.AdmittedTotal != rounds*batch || st.Waiting != rounds*(joining-batch) {
		t.Fatalf("QueueStats = %+v, %v; want %d admitted, %d waiting", st, err, rounds*batch, rounds*(joining-batch))
	}
}

// failSecondPart is a go-redis hook that fails the second run of a script
// that declares fans' keys (an admission part), as a Redis lost mid-tick
// would, without sending it.
type failSecondPart struct {
	mu    sync.Mutex
	parts int
}

func (h *failSecondPart) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failSecondPart) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n, ok := scriptKeyCount(cmd); ok && n > 4 {
			h.mu.Lock()
			h.parts++
			second := h.parts == 2
			h.mu.Unlock()
			if second {
				err := errors.New("connection lost")
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmd)
	}
}

func (h *failSecondPart) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// When a later part of a tick fails, Admit returns the fans the earlier
// parts admitted, who hold their tokens, with the error; the tick stays
// open, and running it again admits the rest of its batch.
func TestQueue_Admit_PartFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := newQueue(t)
	mustJoin(t, q, 1, 500)
	q.Redis.Client.AddHook(&failSecondPart{})

	r, err := q.Admit(ctx, admission(500), 1, time.Second)
	if err == nil || !r.Done || len(r.Admitted) != store.AdmitPart {
		t.Fatalf("Admit = done %v, %d admitted, %v; want the first part's %d with the second's error", r.Done, len(r.Admitted), err, store.AdmitPart)
	}
	for _, a := range r.Admitted {
		if tok, _, ok := entryOf(t, q, a); !ok || tok == "" {
			t.Fatalf("fan %d reported admitted has no entry token", a)
		}
	}
	rest, err := q.Admit(ctx, admission(500), 1, time.Second)
	if err != nil || len(rest.Admitted) != 500-store.AdmitPart || rest.Admitted[0] != store.AdmitPart+1 {
		t.Fatalf("Admit again = %d admitted, %v; want the other %d, from fan %d", len(rest.Admitted), err, 500-store.AdmitPart, store.AdmitPart+1)
	}
}
