package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var (
	_ scs.CtxStore = (*Sessions)(nil)
	_ scs.Codec    = sessionCodec{}
)

// Sessions is the scs session store: sessions live in Redis (key
// <prefix>session:<token>, the value scs.GobCodec's encoding, expiring at
// the session's deadline), and each instance keeps an in-process copy of the
// sessions it served, so that a request of a session it has seen costs no
// Redis round trip and no gob decoding (Codec hands scs a copy of the values
// decoded once).
//
// A copy never outlives the session in Redis by more than a second:
//
//   - Commit and Delete change Redis and PUBLISH the token on the channel
//     <prefix>session:changed in one Lua script (so the message is never
//     lost while the change is made), and every instance drops its copy of
//     that session when the message arrives.
//   - A read from Redis is copied only if no message about its session
//     arrived between the moment it was sent and its answer, so that a read
//     racing a change never leaves a stale copy.
//   - Run checks the channel twice a second by publishing a ping to itself:
//     when the subscription is lost, or a ping has not come back by the next
//     one (messages may be late or lost), the instance drops every copy and
//     reads Redis until the subscription works again.
//   - Run also keeps a sentinel key, <prefix>session:epoch, with a random
//     value set once (SETNX): when Redis loses its data (FLUSHALL, a restart
//     without persistence) the value changes or goes, and every copy is
//     dropped at the next check. On a Redis Cluster there is one sentinel
//     per master (sentinelKeys), since each master may lose its data alone.
//   - PUBLISH reaches every node of a Redis Cluster (the cluster bus
//     forwards it), so the subscription may be on any node.
//
// Without Run, nothing is copied: every Find reads Redis. The copy holds at
// most MaxCopies sessions (the least recently used go first). It is safe
// for concurrent use.
type Sessions struct {
	client   redis.UniversalClient
	prefix   string // of the session keys: <REDIS_PREFIX>session:
	channel  string
	sentinel string
	instance string // this Sessions' id in its pings

	mu     sync.Mutex
	copies *simplelru.LRU[string, *sessionCopy] // token -> copy
	// byEncoded finds a copy, for Decode, by the first byte of the encoded
	// session that FindCtx handed out: Decode is given those bytes, not the
	// token, and a slice's address names its copy without reading it.
	byEncoded map[*byte]*sessionCopy
	reads     map[string]uint64 // token -> id of the read that may copy it
	readID    uint64
	// The conditions of copying: subscribed to the channel, the sentinel's
	// value known, and no ping late.
	subscribed         bool
	epoch              string
	pingSent, pingBack uint64

	metrics sessionMetrics
	// now is the clock sessions' deadlines are compared with.
	now func() time.Time
}

// sessionCopy is one session as the instance keeps it.
type sessionCopy struct {
	token string
	// encoded is the session as stored in Redis (never empty, never
	// changed), handed to every request that finds the session without a
	// copy each: scs only passes it to the codec's Decode, which reads it.
	encoded  []byte
	deadline time.Time
	values   map[string]any // decoded from encoded; never changed: Decode hands out clones
}

// DefaultMaxSessionCopies is how many sessions an instance keeps a copy of
// when NewSessions is given 0: about 1 KB each.
const DefaultMaxSessionCopies = 100_000

// SessionCheckEvery is how often Run pings the channel and reads the
// sentinel. A ping must come back before the next one is sent, so a copy is
// dropped at most two periods (a second) after the channel stopped working.
const SessionCheckEvery = 500 * time.Millisecond

type sessionMetrics struct {
	copies    prometheus.GaugeFunc
	hits      prometheus.Counter
	misses    prometheus.Counter
	evictions prometheus.Counter
	drops     *prometheus.CounterVec
}

// Reasons for dropping every copy, as the drops metric labels them.
const (
	dropUnsubscribed = "unsubscribed" // the subscription was lost or not confirmed yet
	dropLatePing     = "late_ping"    // a ping did not come back within a period
	dropUnreachable  = "unreachable"  // the check could not reach Redis
	dropDataLost     = "data_lost"    // the sentinel changed: Redis lost its data
)

// NewSessions returns a session store on client whose keys all start with
// prefix+"session:", keeping copies of at most maxCopies sessions
// (DefaultMaxSessionCopies when 0). Its metrics are registered on reg (none
// when nil): boxoffice_session_copies, boxoffice_session_copy_hits_total,
// boxoffice_session_copy_misses_total, boxoffice_session_copy_evictions_total
// and boxoffice_session_copy_drops_total{reason}. Start Run for the copies.
func NewSessions(client redis.UniversalClient, prefix string, maxCopies int, reg prometheus.Registerer) (*Sessions, error) {
	if maxCopies == 0 {
		maxCopies = DefaultMaxSessionCopies
	}
	id := make([]byte, 8)
	rand.Read(id)
	s := &Sessions{
		client:    client,
		prefix:    prefix + "session:",
		channel:   prefix + "session:changed",
		sentinel:  prefix + "session:epoch",
		instance:  hex.EncodeToString(id),
		byEncoded: map[*byte]*sessionCopy{},
		reads:     map[string]uint64{},
		now:       time.Now,
	}
	var err error
	s.copies, err = simplelru.NewLRU(maxCopies, func(_ string, c *sessionCopy) {
		delete(s.byEncoded, &c.encoded[0])
	})
	if err != nil {
		return nil, fmt.Errorf("session copies: %w", err)
	}
	s.metrics = sessionMetrics{
		copies: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "boxoffice_session_copies",
			Help: "Sessions this instance holds an in-process copy of.",
		}, func() float64 { s.mu.Lock(); defer s.mu.Unlock(); return float64(s.copies.Len()) }),
		hits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_session_copy_hits_total",
			Help: "Sessions found in the in-process copy, with no Redis round trip.",
		}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_session_copy_misses_total",
			Help: "Sessions read from Redis.",
		}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_session_copy_evictions_total",
			Help: "Session copies evicted to keep the copy within its size.",
		}),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_session_copy_drops_total",
			Help: "Times every session copy was dropped, by reason.",
		}, []string{"reason"}),
	}
	for _, r := range []string{dropUnsubscribed, dropLatePing, dropUnreachable, dropDataLost} {
		s.metrics.drops.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{s.metrics.copies, s.metrics.hits, s.metrics.misses, s.metrics.evictions, s.metrics.drops} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register session metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Codec returns the scs codec to use with this store: scs.GobCodec's
// encoding, and a decoding that hands out a copy of the values decoded once
// for a session held in the copy.
func (s *Sessions) Codec() scs.Codec { return sessionCodec{s} }

// Copying reports whether Find may answer from the in-process copy: the
// subscription is confirmed, the sentinel known, and a ping came back and
// none is late (the one under way has until the next check).
func (s *Sessions) Copying() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copying()
}

func (s *Sessions) copying() bool {
	return s.subscribed && s.epoch != "" && s.pingBack > 0 && s.pingBack+1 >= s.pingSent
}

// FindCtx returns the encoded session of token: from the copy when it holds
// a live one, else from Redis (GET, one round trip), copying what it read.
// The bytes are shared with the requests that find the same copy: callers
// must not change them (scs only decodes them).
func (s *Sessions) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	now := s.now()
	s.mu.Lock()
	var id uint64
	if s.copying() {
		if c, ok := s.copies.Get(token); ok {
			if now.Before(c.deadline) {
				s.mu.Unlock()
				s.metrics.hits.Inc()
				return c.encoded, true, nil
			}
			s.copies.Remove(token)
		}
		s.readID++
		id = s.readID
		s.reads[token] = id
	}
	s.mu.Unlock()
	s.metrics.misses.Inc()

	b, err := s.client.Get(ctx, s.prefix+token).Bytes()
	if errors.Is(err, redis.Nil) {
		s.endRead(token, id, nil)
		return nil, false, nil
	} else if err != nil {
		s.endRead(token, id, nil)
		return nil, false, fmt.Errorf("find session: %w", err)
	}
	deadline, values, err := scs.GobCodec{}.Decode(b)
	if err != nil || !now.Before(deadline) {
		// scs reports the undecodable value; an expired one is not found.
		s.endRead(token, id, nil)
		return b, err != nil, nil
	}
	s.endRead(token, id, &sessionCopy{token: token, encoded: b, deadline: deadline, values: values})
	return b, true, nil
}

// endRead ends the read id of token (0: a read that may not copy), keeping c
// (if not nil) when no message about the session arrived and no drop
// happened since the read was sent.
func (s *Sessions) endRead(token string, id uint64, c *sessionCopy) {
	if id == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reads[token] != id {
		return
	}
	delete(s.reads, token)
	if c == nil || !s.copying() {
		return
	}
	if old, ok := s.copies.Peek(token); ok {
		s.copies.Remove(old.token)
	}
	if s.copies.Add(token, c) {
		s.metrics.evictions.Inc()
	}
	s.byEncoded[&c.encoded[0]] = c
}

// sessionScript writes or deletes a session and publishes its token, in one
// step. KEYS[1] the session's key; ARGV[1] the channel, ARGV[2] the
// message, ARGV[3] the value ("" to delete), ARGV[4] its expiry (Unix ms).
var sessionScript = redis.NewScript(`
if ARGV[3] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[3], 'PXAT', ARGV[4])
end
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
`)

// CommitCtx writes the session into Redis, expiring at expiry, and tells
// every instance to drop its copy (one Lua script, one round trip). This
// instance drops its own copy at once.
func (s *Sessions) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	if len(b) == 0 {
		return errors.New("commit session: empty value")
	}
	return s.change(ctx, token, string(b), max(expiry.UnixMilli(), 1))
}

// DeleteCtx deletes the session from Redis and tells every instance to drop
// its copy (one Lua script, one round trip). This instance drops its own
// copy at once.
func (s *Sessions) DeleteCtx(ctx context.Context, token string) error {
	return s.change(ctx, token, "", 0)
}

func (s *Sessions) change(ctx context.Context, token, value string, expiryMs int64) error {
	s.forget(token)
	err := sessionScript.Run(ctx, s.client, []string{s.prefix + token}, s.channel, changedPrefix+token, value, expiryMs).Err()
	if err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	return nil
}

// Find, Commit and Delete are FindCtx, CommitCtx and DeleteCtx without a
// context (scs.Store).
func (s *Sessions) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

// Commit is CommitCtx without a context.
func (s *Sessions) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

// Delete is DeleteCtx without a context.
func (s *Sessions) Delete(token string) error {
	return s.DeleteCtx(context.Background(), token)
}

// Messages on the channel: a session changed, or an instance's ping.
const (
	changedPrefix = "changed:" // followed by the token
	pingPrefix    = "ping:"    // followed by the instance id, ':', the ping's number
)

// forget drops the copy of token and voids any read of it under way.
func (s *Sessions) forget(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.copies.Remove(token)
	delete(s.reads, token)
}

// dropAll drops every copy and voids every read under way.
func (s *Sessions) dropAll(reason string) {
	if s.copies.Len() > 0 || len(s.reads) > 0 {
		s.metrics.drops.WithLabelValues(reason).Inc()
	}
	s.copies.Purge()
	clear(s.reads)
}

// Run keeps the copies safe to use until ctx ends: it subscribes to the
// channel and drops copies as messages say, and every SessionCheckEvery it
// pings the channel and reads the sentinel (one round trip). It returns
// when ctx ends, dropping every copy: Find then reads Redis.
func (s *Sessions) Run(ctx context.Context) error {
	ps := s.client.Subscribe(ctx, s.channel)
	var wg sync.WaitGroup
	defer func() {
		ps.Close()
		wg.Wait()
		s.mu.Lock()
		s.subscribed = false
		s.dropAll(dropUnsubscribed)
		s.mu.Unlock()
	}()
	wg.Go(func() { s.check(ctx) })
	go func() { <-ctx.Done(); ps.Close() }()
	for ctx.Err() == nil {
		msg, err := ps.ReceiveTimeout(ctx, 2*SessionCheckEvery)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // a quiet channel: the pings say whether it works
			}
			s.mu.Lock()
			s.subscribed = false
			s.dropAll(dropUnsubscribed)
			s.mu.Unlock()
			select { // go-redis reconnects at the next Receive
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			s.mu.Lock()
			s.subscribed = m.Kind == "subscribe" && m.Channel == s.channel
			s.dropAll(dropUnsubscribed) // messages may have been lost before it
			s.mu.Unlock()
		case *redis.Message:
			s.receive(m.Payload)
		}
	}
	return nil
}

// receive handles one message of the channel.
func (s *Sessions) receive(payload string) {
	if token, ok := strings.CutPrefix(payload, changedPrefix); ok {
		s.forget(token)
		return
	}
	rest, ok := strings.CutPrefix(payload, pingPrefix+s.instance+":")
	if !ok {
		return // another instance's ping
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.pingBack = max(s.pingBack, n)
	s.mu.Unlock()
}

// check pings the channel and reads the sentinel every SessionCheckEvery
// until ctx ends.
func (s *Sessions) check(ctx context.Context) {
	t := time.NewTicker(SessionCheckEvery)
	defer t.Stop()
	for {
		s.checkOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkOnce drops every copy if the last ping has not come back, sends the
// next, and sets the sentinel if it is missing and reads it, in one round
// trip: a sentinel other than the one known means that Redis lost its data.
func (s *Sessions) checkOnce(ctx context.Context) {
	candidate := make([]byte, 16)
	rand.Read(candidate)
	s.mu.Lock()
	if s.pingBack < s.pingSent {
		s.dropAll(dropLatePing)
	}
	s.pingSent++
	ping := pingPrefix + s.instance + ":" + strconv.FormatUint(s.pingSent, 10)
	s.mu.Unlock()

	// A Redis that does not answer within a period counts as unreachable.
	ctx, cancel := context.WithTimeout(ctx, SessionCheckEvery)
	defer cancel()
	sentinels, err := s.sentinelKeys(ctx)
	gets := make([]*redis.StringCmd, len(sentinels))
	if err == nil {
		_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range sentinels {
				p.SetNX(ctx, k, hex.EncodeToString(candidate), 0)
				gets[i] = p.Get(ctx, k)
			}
			p.Publish(ctx, s.channel, ping)
			return nil
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.epoch = ""
		s.dropAll(dropUnreachable)
		return
	}
	values := make([]string, len(gets))
	for i, g := range gets {
		values[i] = g.Val()
	}
	if epoch := strings.Join(values, ","); epoch != s.epoch {
		s.dropAll(dropDataLost)
		s.epoch = epoch
	}
}

// sentinelKeys returns the sentinel key of one server, or on a cluster one
// sentinel key per master (<prefix>session:epoch:{n}, with the first n whose
// slot that master serves, found from the client's copy of the slot map
// without a round trip): a master that loses its data loses the sessions
// of its slots only, and its own sentinel says so.
func (s *Sessions) sentinelKeys(ctx context.Context) ([]string, error) {
	cc, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return []string{s.sentinel}, nil
	}
	var mu sync.Mutex
	masters := map[string]bool{}
	if err := cc.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
		mu.Lock()
		masters[node.Options().Addr] = true
		mu.Unlock()
		return nil
	}); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var keys []string
	for n := 0; len(seen) < len(masters) && n < 1<<16; n++ {
		k := s.sentinel + ":{" + strconv.Itoa(n) + "}"
		node, err := cc.MasterForKey(ctx, k)
		if err != nil {
			return nil, err
		}
		if addr := node.Options().Addr; masters[addr] && !seen[addr] {
			seen[addr] = true
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// sessionCodec is Sessions' scs.Codec.
type sessionCodec struct{ s *Sessions }

// Encode is scs.GobCodec's.
func (sessionCodec) Encode(deadline time.Time, values map[string]any) ([]byte, error) {
	return scs.GobCodec{}.Encode(deadline, values)
}

// Decode returns a copy of the values decoded once when b is the encoded
// session of a copy the instance holds (the very bytes FindCtx handed out,
// found by their address), and decodes b (scs.GobCodec) otherwise: equal
// bytes read from Redis are decoded, which gives the same values. A copy
// dropped (a change, a log-out, a lost Redis) is no longer found.
func (c sessionCodec) Decode(b []byte) (time.Time, map[string]any, error) {
	if len(b) == 0 {
		return scs.GobCodec{}.Decode(b)
	}
	c.s.mu.Lock()
	sc := c.s.byEncoded[&b[0]]
	c.s.mu.Unlock()
	if sc != nil && len(sc.encoded) == len(b) {
		return sc.deadline, maps.Clone(sc.values), nil
	}
	return scs.GobCodec{}.Decode(b)
}
