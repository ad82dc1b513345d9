package store_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// logoutBound is how soon a session deleted in Redis must stop being served
// from any instance's copy.
const logoutBound = time.Second

// sessionInstance is one instance's session store, running, with its
// metrics.
type sessionInstance struct {
	*store.Sessions
	reg *prometheus.Registry
}

// startSessions starts a session store on client and prefix, as an
// instance does, and waits until it copies sessions.
func startSessions(t *testing.T, client redis.UniversalClient, prefix string, maxCopies int) *sessionInstance {
	t.Helper()
	reg := prometheus.NewRegistry()
	s, err := store.NewSessions(client, prefix, maxCopies, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 10*time.Second, "the session store copies sessions", s.Copying)
	return &sessionInstance{s, reg}
}

// metric returns the value of the counter or gauge named name.
func (s *sessionInstance) metric(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// commit writes a session with the values, as scs does at log-in.
func commit(t *testing.T, s *sessionInstance, token string, values map[string]any) {
	t.Helper()
	deadline := time.Now().Add(time.Hour)
	b, err := s.Codec().Encode(deadline, values)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CommitCtx(context.Background(), token, b, deadline); err != nil {
		t.Fatal(err)
	}
}

// find returns the session's values as scs would load them, or nil.
func find(t *testing.T, s *sessionInstance, token string) map[string]any {
	t.Helper()
	b, found, err := s.FindCtx(context.Background(), token)
	if err != nil {
		t.Fatalf("find %s: %v", token, err)
	}
	if !found {
		return nil
	}
	_, values, err := s.Codec().Decode(b)
	if err != nil {
		t.Fatalf("decode %s: %v", token, err)
	}
	return values
}

// copied finds the session on s until s answers it from its copy (a find
// racing the message of the commit is not copied), and returns its values.
func copied(t *testing.T, s *sessionInstance, token string) map[string]any {
	t.Helper()
	var v map[string]any
	waitFor(t, 10*time.Second, "a copy of "+token, func() bool {
		v = find(t, s, token)
		misses := s.metric(t, "boxoffice_session_copy_misses_total")
		v = find(t, s, token)
		return s.metric(t, "boxoffice_session_copy_misses_total") == misses
	})
	return v
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: not yet: %s", d, what)
		}
	}
}

// Two instances share Redis: a session committed on one is served by the
// other, from its copy after the first read; a log-out (Delete) on one ends
// the session on the other within logoutBound, and so does a change; and a
// copy handed to scs is the instance's own (scs changes it freely).
func TestSessions_TwoInstances(t *testing.T) {
	t.Parallel()
	r := storetest.MustOpenRedis(t)
	a := startSessions(t, r.Client, r.Prefix, 0)
	b := startSessions(t, r.Client, r.Prefix, 0)

	commit(t, a, "token-1", map[string]any{"account_id": int64(7), "sid": "s1"})
	v := copied(t, b, "token-1")
	if v["account_id"] != int64(7) {
		t.Fatalf("instance b reads %v, want account 7", v)
	}
	v["account_id"] = int64(8) // scs changes the values it loaded
	if v := find(t, b, "token-1"); v["account_id"] != int64(7) {
		t.Fatalf("a change to loaded values reached the copy: %v", v)
	}

	// A change on a: b drops its copy and reads the new one.
	commit(t, a, "token-1", map[string]any{"account_id": int64(7), "sid": "s1", "notice": "held"})
	waitFor(t, logoutBound, "instance b sees the changed session", func() bool { return find(t, b, "token-1")["notice"] == "held" })

	// Log-out on a.
	copied(t, b, "token-1")
	if err := a.DeleteCtx(context.Background(), "token-1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, logoutBound, "instance b ends the deleted session", func() bool { return find(t, b, "token-1") == nil })
	if find(t, a, "token-1") != nil {
		t.Error("the instance that deleted the session still serves it")
	}
}

// Finds racing a log-out never leave a copy of the deleted session: once
// Delete returned and the bound passed, no instance serves it, however the
// reads and the message interleaved.
func TestSessions_FindRacingDelete(t *testing.T) {
	t.Parallel()
	r := storetest.MustOpenRedis(t)
	a := startSessions(t, r.Client, r.Prefix, 0)
	b := startSessions(t, r.Client, r.Prefix, 0)
	for round := range 20 {
		token := fmt.Sprintf("race-%d", round)
		commit(t, a, token, map[string]any{"account_id": int64(round)})
		copied(t, b, token)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 20 {
					if _, _, err := b.FindCtx(context.Background(), token); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		if err := a.DeleteCtx(context.Background(), token); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		waitFor(t, logoutBound, "instance b ends "+token, func() bool { return find(t, b, token) == nil })
	}
}

// Decode finds a copy by the bytes FindCtx handed out, not by the token:
// while sessions change on another instance and hundreds of requests find
// and decode them at once, every request decodes its own session, in the
// version its bytes hold (what scs's gob decoding of them says), and gets
// values of its own to change.
func TestSessions_DecodeFindsItsOwnCopy(t *testing.T) {
	t.Parallel()
	r := storetest.MustOpenRedis(t)
	a := startSessions(t, r.Client, r.Prefix, 0)
	b := startSessions(t, r.Client, r.Prefix, 0)
	const sessions, requests, rounds = 20, 200, 30
	token := func(i int) string { return fmt.Sprintf("own-%d", i) }
	for i := range sessions {
		commit(t, a, token(i), map[string]any{"token": token(i), "version": int64(0)})
	}
	ctx, stop := context.WithCancel(context.Background())
	var changes sync.WaitGroup
	changes.Go(func() {
		for v := int64(1); ctx.Err() == nil; v++ {
			i := int(v) % sessions
			commit(t, a, token(i), map[string]any{"token": token(i), "version": v})
			time.Sleep(time.Millisecond)
		}
	})
	var wg sync.WaitGroup
	for g := range requests {
		wg.Go(func() {
			for n := range rounds {
				tok := token((g + n) % sessions)
				enc, found, err := b.FindCtx(context.Background(), tok)
				if err != nil || !found {
					t.Errorf("find %s: %v, %v", tok, found, err)
					return
				}
				_, got, err := b.Codec().Decode(enc)
				if err != nil {
					t.Errorf("decode %s: %v", tok, err)
					return
				}
				_, want, err := scs.GobCodec{}.Decode(enc)
				if err != nil {
					t.Errorf("gob decode %s: %v", tok, err)
					return
				}
				if !maps.Equal(got, want) || got["token"] != tok {
					t.Errorf("%s decodes to %v, its bytes say %v", tok, got, want)
					return
				}
				got["version"] = int64(-1) // scs changes the values it loaded
			}
		})
	}
	wg.Wait()
	stop()
	changes.Wait()
	// The storm may find every copy changed under it on a loaded machine;
	// a session that does not change is found in the copy from its second
	// read on, so the copy's path is taken whatever the storm's luck.
	quiet := "own-quiet"
	commit(t, a, quiet, map[string]any{"token": quiet, "version": int64(0)})
	hits := b.metric(t, "boxoffice_session_copy_hits_total")
	for range 3 {
		enc, found, err := b.FindCtx(context.Background(), quiet)
		if err != nil || !found {
			t.Fatalf("find %s: %v, %v", quiet, found, err)
		}
		if _, got, err := b.Codec().Decode(enc); err != nil || got["token"] != quiet {
			t.Fatalf("decode %s: %v, %v", quiet, got, err)
		}
	}
	if b.metric(t, "boxoffice_session_copy_hits_total") == hits {
		t.Errorf("a session read three times, unchanged, was never found in the copy")
	}
	for i := range sessions {
		enc, _, err := b.FindCtx(context.Background(), token(i))
		if err != nil {
			t.Fatal(err)
		}
		_, v1, _ := b.Codec().Decode(enc)
		_, v2, _ := b.Codec().Decode(bytes.Clone(enc))
		if v1["version"] == int64(-1) || !maps.Equal(v1, v2) {
			t.Errorf("%s: %v from the copy, %v from equal bytes", token(i), v1, v2)
		}
	}
}

// The copy is bounded: past maxCopies the least recently used go, and the
// evictions are counted.
func TestSessions_Bounded(t *testing.T) {
	t.Parallel()
	r := storetest.MustOpenRedis(t)
	s := startSessions(t, r.Client, r.Prefix, 3)
	for i := range 5 {
		// Written as the load test writes sessions, with no message that
		// could drop a copy while the test counts them.
		token := fmt.Sprintf("t%d", i)
		b, err := s.Codec().Encode(time.Now().Add(time.Hour), map[string]any{"n": int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Client.Set(context.Background(), r.Prefix+"session:"+token, b, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		copied(t, s, token)
	}
	if got := s.metric(t, "boxoffice_session_copies"); got != 3 {
		t.Errorf("%v copies, want 3", got)
	}
	if got := s.metric(t, "boxoffice_session_copy_evictions_total"); got != 2 {
		t.Errorf("%v evictions, want 2", got)
	}
	if v := find(t, s, "t0"); v["n"] != int64(0) {
		t.Errorf("an evicted session reads %v, want it from Redis", v)
	}
}

// Redis loses its data (FLUSHALL) or its subscription (a restart, a killed
// connection): every copy ends within logoutBound, and sessions are read
// from Redis, which no longer has them.
func TestSessions_RedisLost(t *testing.T) {
	t.Parallel()
	p := storetest.StartRedis(t)
	opt, err := redis.ParseURL(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	t.Cleanup(func() { client.Close() })
	a := startSessions(t, client, "t:", 0)
	b := startSessions(t, client, "t:", 0)
	ctx := context.Background()

	t.Run("Flushall", func(t *testing.T) {
		commit(t, a, "f", map[string]any{"n": int64(1)})
		copied(t, b, "f")
		if err := client.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, logoutBound, "instance b ends the flushed session", func() bool { return find(t, b, "f") == nil })
		waitFor(t, 10*time.Second, "copying again", b.Copying)
	})
	t.Run("SubscriptionLost", func(t *testing.T) {
		commit(t, a, "k", map[string]any{"n": int64(2)})
		copied(t, b, "k")
		// A change that no message tells of, as while the subscription is
		// down: the killed subscriptions must make b read Redis.
		if err := client.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		if err := client.Del(ctx, "t:session:k").Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, logoutBound, "instance b ends the session deleted while unsubscribed", func() bool { return find(t, b, "k") == nil })
		waitFor(t, 10*time.Second, "copying again", b.Copying)
		commit(t, a, "k2", map[string]any{"n": int64(3)})
		if v := find(t, b, "k2"); v["n"] != int64(3) {
			t.Errorf("after the subscription came back, b reads %v", v)
		}
	})
}
