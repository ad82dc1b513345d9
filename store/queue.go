package store

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/redis/go-redis/v9"
)

var _ boxoffice.QueueService = (*Queue)(nil)

var (
	//go:embed lua/queue_admit.lua
	queueAdmitLua string
	//go:embed lua/queue_stats.lua
	queueStatsLua string
	//go:embed lua/queue_draw_state.lua
	queueDrawStateLua string
	//go:embed lua/queue_positions.lua
	queuePositionsLua string
	//go:embed lua/queue_entry.lua
	queueEntryLua string
	//go:embed lua/queue_join.lua lua/queue_draw.lua lua/queue_draw_run.lua
	queueLua embed.FS

	queueJoinScript      = newHotScript(loadScript(queueLua, "lua/queue_draw.lua", "lua/queue_join.lua"))
	queueDrawScript      = loadScript(queueLua, "lua/queue_draw.lua", "lua/queue_draw_run.lua")
	queueAdmitScript     = redis.NewScript(queueAdmitLua)
	queueStatsScript     = redis.NewScript(queueStatsLua)
	queueDrawStateScript = redis.NewScript(queueDrawStateLua)
	queuePositionsScript = newHotScript(redis.NewScript(queuePositionsLua))
	queueEntryScript     = newHotScript(redis.NewScript(queueEntryLua))
)

// Queue is the waiting room of every event, in Redis (DESIGN.md rules 5, 6
// and 7). Per event {e} it keeps:
//
//	queue:{e}         sorted set account -> join sequence
//	queue:seq:{e}     the INCR counter of join sequences
//	queue:sess:{e}    hash account -> session key of the place
//	queue:stats:{e}   hash of shared figures: epoch, head (sequence of the
//	                  last fan admitted), admitted total, last tick, the
//	                  settings of the last tick and the recent ticks' records
//	entry:{e}:{acct}  "<token>|<session key>", expiring with the token (PXAT)
//	entry:live:{e}    sorted set account -> token expiry (Unix ms); expired
//	                  members stay, so that "expired" can be told from "never"
//	prequeue:{e}      sorted set, all of score 0, of "<rank>:<ticket>:<acct>"
//	                  (rank: boxoffice.DrawRank), so in drawn order; kept
//	                  after the draw, which it publishes
//	prequeue:acct:{e} hash account -> "<ticket>|<session key>"
//
// queue:stats:{e} also says "drawn" once the pre-queue was placed in line.
//
// A fan's position is their sequence minus the head, so positions cost two
// O(1) reads however long the line is. Times are Redis's clock. It is safe
// for concurrent use.
//
// Each instance keeps the shared figures (epoch, head, pace) of its latest
// read per event: Position answers a fan whose place they show still
// waiting from them until the next tick's read is due, with no round trip,
// and Join places a fan with them instead of reading them again.
type Queue struct {
	Redis *Redis
	// Pipe, if not nil, sends the scripts of the sale's hot requests (a
	// join, a position read, an entry read) in place of Redis.Client: the
	// binary sets go-redis's automatic pipelining of that client
	// (Redis.AutoPipeline), which writes the scripts of the requests in
	// flight at once in one batch and reads their replies together, so that
	// each costs a share of a write and a read instead of its own (with the
	// pool's check of the connection). Each request still waits for its own
	// reply; the scripts, their keys and their checks are the same. Its
	// hooks see no request's context, so tests that count a request's
	// commands through a hook leave it nil. Admissions, draws and the
	// figures' own reads stay on Redis.Client.
	Pipe HotScripter
	// Metrics, if not nil, counts joins and admissions.
	Metrics *QueueMetrics

	mu      sync.Mutex
	figures map[int64]queueFigures   // event id -> the latest figures read
	flights map[int64]*figuresFlight // event id -> the refresh under way
	gens    map[int64]uint64         // event id -> times this instance admitted
	keys    perEvent[queueKeys]
}

// hot returns where the hot requests' scripts go: Pipe, or Redis.Client.
func (q *Queue) hot() HotScripter {
	if q.Pipe != nil {
		return q.Pipe
	}
	return q.Redis.Client
}

// figuresFlight is one refresh of an event's figures under way: the polls
// that find the figures stale while it is in flight wait for it (done is
// closed once f and ok are set) instead of reading Redis themselves.
type figuresFlight struct {
	done chan struct{}
	gen  uint64 // figuresGen at the start
	f    queueFigures
	ok   bool
}

// queueFigures is one read of an event's shared figures.
type queueFigures struct {
	st  queueStats
	now time.Time // Redis's clock at the read
	at  time.Time // the store's clock (Redis.Now) at the read
}

// window returns the number of the tick window that t falls in: windows
// start a quarter tick after each tick starts, when the admitter (which
// starts at the tick) has usually admitted its batch.
func (f queueFigures) window(t time.Time) int64 {
	return boxoffice.TickIndex(t.Add(-f.st.pace.Tick/4), f.st.pace.Tick)
}

// keepFigures keeps st, read at now on Redis's clock, as the event's figures
// unless ones read later on that clock are kept or this instance admitted
// since gen (figuresGen) was taken before the read; it returns the figures
// read. Figures read in the same millisecond are replaced: the later read
// is the one of the current tick window (Redis's clock counts whole
// milliseconds, and a read at the end of one window and the next at the
// start of the following one may share one).
func (q *Queue) keepFigures(eventID int64, gen uint64, st queueStats, now time.Time) queueFigures {
	q.mu.Lock()
	defer q.mu.Unlock()
	f := queueFigures{st: st, now: now, at: q.Redis.Now()}
	if q.gens[eventID] != gen {
		return f
	}
	if q.figures == nil {
		q.figures = map[int64]queueFigures{}
	}
	if old, ok := q.figures[eventID]; !ok || !now.Before(old.now) {
		q.figures[eventID] = f
	}
	return f
}

// currentFigures returns the event's figures if this instance read them in
// the current tick window (fresh), as Position answers from them.
func (q *Queue) currentFigures(eventID int64) (f queueFigures, fresh bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f, ok := q.figures[eventID]
	return f, ok && f.window(q.Redis.Now()) == f.window(f.at)
}

// figuresGen returns the number of times this instance admitted the event,
// taken before a read of its figures.
func (q *Queue) figuresGen(eventID int64) uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.gens[eventID]
}

// forgetFigures drops the event's figures, after this instance admitted,
// and detaches the refresh under way, if any: it may have read the figures
// before the admission, so they are not kept, and the polls that come
// after start a refresh of their own.
func (q *Queue) forgetFigures(eventID int64) {
	q.mu.Lock()
	delete(q.figures, eventID)
	delete(q.flights, eventID)
	if q.gens == nil {
		q.gens = map[int64]uint64{}
	}
	q.gens[eventID]++
	q.mu.Unlock()
}

// figuresFlight returns the event's figures of the current tick window if
// this instance has them (ok); otherwise the refresh under way, which the
// caller waits for, or a new one that the caller leads (lead): its read of
// Redis lands the flight (land), and the polls that come meanwhile wait for
// it instead of reading Redis themselves, so the instance reads an event's
// figures at most once per tick window and once after each of its own
// admissions, however many polls arrive together.
func (q *Queue) figuresFlight(eventID int64) (f queueFigures, ok bool, fl *figuresFlight, lead bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if f, ok := q.figures[eventID]; ok && f.window(q.Redis.Now()) == f.window(f.at) {
		return f, true, nil, false
	}
	if fl, ok := q.flights[eventID]; ok {
		return queueFigures{}, false, fl, false
	}
	fl = &figuresFlight{done: make(chan struct{}), gen: q.gens[eventID]}
	if q.flights == nil {
		q.flights = map[int64]*figuresFlight{}
	}
	q.flights[eventID] = fl
	return queueFigures{}, false, fl, true
}

// land ends the flight with the figures its leader read (ok false: the
// read failed, and each waiting poll reads for itself).
func (q *Queue) land(eventID int64, fl *figuresFlight, f queueFigures, ok bool) {
	q.mu.Lock()
	if q.flights[eventID] == fl {
		delete(q.flights, eventID)
	}
	q.mu.Unlock()
	fl.f, fl.ok = f, ok
	close(fl.done)
}

// wait returns the flight's figures once it lands; ok is false if its read
// failed or ctx ended first.
func (fl *figuresFlight) wait(ctx context.Context) (queueFigures, bool) {
	select {
	case <-fl.done:
		return fl.f, fl.ok
	case <-ctx.Done():
		return queueFigures{}, false
	}
}

// tokenBytes is the entropy of an entry token: 128 bits from crypto/rand.
const tokenBytes = 16

func (q *Queue) queueKey(e int64) string { return q.keysOf(e).queue }
func (q *Queue) seqKey(e int64) string   { return q.keysOf(e).seq }
func (q *Queue) sessKey(e int64) string  { return q.keysOf(e).sess }
func (q *Queue) statsKey(e int64) string { return q.keysOf(e).stats }
func (q *Queue) liveKey(e int64) string  { return q.keysOf(e).live }
func (q *Queue) preKey(e int64) string   { return q.keysOf(e).pre }
func (q *Queue) preAcctKey(e int64) string {
	return q.keysOf(e).preAcct
}

// queueKeys are the keys of an event's line that the hot scripts name,
// built once per event and instance: a join names eight of them, a poll
// three or four, and each built anew was an allocation.
type queueKeys struct {
	queue, seq, sess, stats, live, pre, preAcct, bought, entryPrefix string
	// boxed holds the keys that the hot scripts name (the join's, the
	// positions' and the entry read's), boxed once as a call's arguments
	// (hotCall).
	boxed struct{ queue, seq, sess, stats, live, pre, preAcct, bought any }
}

// keysOf returns event e's queueKeys, kept for every event the instance
// has served (a few strings an event).
func (q *Queue) keysOf(e int64) *queueKeys {
	return q.keys.get(e, func() *queueKeys {
		k := &queueKeys{
			queue: q.Redis.Key("queue:{%d}", e), seq: q.Redis.Key("queue:seq:{%d}", e),
			sess: q.Redis.Key("queue:sess:{%d}", e), stats: q.Redis.Key("queue:stats:{%d}", e),
			live: q.Redis.entryLiveKey(e), pre: q.Redis.Key("prequeue:{%d}", e),
			preAcct: q.Redis.Key("prequeue:acct:{%d}", e), bought: q.Redis.boughtKey(e),
			entryPrefix: q.Redis.entryPrefix(e),
		}
		k.boxed.queue, k.boxed.seq, k.boxed.sess, k.boxed.stats = k.queue, k.seq, k.sess, k.stats
		k.boxed.live, k.boxed.pre, k.boxed.preAcct, k.boxed.bought = k.live, k.pre, k.preAcct, k.bought
		return k
	})
}

// entryKey is the account's entry token key for event e (Redis.entryKey).
func (q *Queue) entryKey(e, accountID int64) string {
	return keyOf(q.keysOf(e).entryPrefix, accountID)
}

// proofKey is the used proof of work of challenge for event e (the join
// script's KEYS[9]).
func (q *Queue) proofKey(e int64, challenge string) string {
	return q.Redis.Key("queue:proof:{%d}:%s", e, challenge)
}

// Join gives the account a place in the event's line in one Redis round trip
// (one Lua script): INCR and ZADD NX for a new place, or the place it has;
// the place is bound to sessionKey (a rejoin from another session moves the
// binding). An account with a live entry token gets QueueAdmitted, and a
// join from another session than the token's moves the turn to sessionKey:
// a fresh token bound to it, expiring when the old one would have (a rejoin
// never lengthens a turn), so the earlier session's copy stops working
// (ReasonOtherSession there). After a sell-out an account without a place
// gets QueueSoldOut and no place. An account whose count in bought:{e}
// has reached r.Limit gets ELIMITREACHED and nothing changes (no place, no
// turn moved). A fan in line is placed with the figures this instance read
// in the current tick window, as Position places a poll (the head may lag
// by the admission that ran since), when the script finds that they have
// the queue's epoch and sold-out mark, and it then answers the epoch
// alone (and reads no clock: the fan's wait is estimated on the figures'
// clock, as Position's); otherwise it answers the whole figures and
// Redis's clock, which Join keeps. The
// caller checks that the event's queue is open (Event.QueueOpen) first:
// Join does not read events.
func (q *Queue) Join(ctx context.Context, r boxoffice.JoinRequest) (boxoffice.QueuePosition, error) {
	eventID, accountID, sessionKey := r.EventID, r.AccountID, r.SessionKey
	if sessionKey == "" {
		return boxoffice.QueuePosition{}, errors.New("join queue: empty session key")
	}
	epoch, token := twoRandomTokens()
	var drawAt int64
	if !r.DrawAt.IsZero() {
		if !boxoffice.ValidDrawTicket(r.Ticket) || len(r.Rank) != 64 {
			return boxoffice.QueuePosition{}, fmt.Errorf("join queue of event %d: a pre-queue needs a draw ticket and its rank", eventID)
		}
		drawAt = r.DrawAt.UnixMilli()
	}
	k := q.keysOf(eventID).boxed
	call, v := hotCall(9 + 11)
	call = append(call, k.queue, k.seq, k.sess, k.stats, q.entryKey(eventID, accountID), k.bought, k.pre, k.preAcct)
	var proofUntil int64
	if r.Proof != "" {
		// kept a minute past the expiry, so that a Redis clock behind ours
		// cannot forget a proof that Verify still takes
		call, proofUntil = append(call, q.proofKey(eventID, r.Proof)), r.ProofExpires.Add(time.Minute).UnixMilli()
	}
	keys := len(call) - hotCallStart
	gen := q.figuresGen(eventID)
	kept, fresh := q.currentFigures(eventID)
	var keptEpoch string
	if fresh {
		keptEpoch = kept.st.epoch
	}
	call = append(call, v.int(accountID), v.str(sessionKey), v.str(epoch), v.str(token), max(r.Limit, 0), v.int(drawAt),
		v.str(r.Ticket), v.str(r.Rank), v.int(proofUntil), v.str(keptEpoch), boxedBool(kept.st.soldOut), boxedBool(kept.st.pace.Paused))
	res, err := runHot(ctx, q.hot(), queueJoinScript, false, keys, call).Slice()
	if err != nil {
		return boxoffice.QueuePosition{}, fmt.Errorf("join queue of event %d: %w", eventID, err)
	}
	if len(res) < 4 {
		return boxoffice.QueuePosition{}, fmt.Errorf("join queue of event %d: unexpected reply %v", eventID, res)
	}
	state, _ := res[0].(string)
	seq := toInt64(res[1])
	var st queueStats
	var now time.Time // for a fan in line: Redis's clock
	switch figures := res[3].(type) {
	case []any: // the stats hash, read at Redis's clock res[2]
		now = time.UnixMilli(toInt64(res[2]))
		st = parseStats(figures)
		q.keepFigures(eventID, gen, st, now)
	case string: // the epoch: for a fan in line, the kept figures hold, on their clock as in Position
		st.epoch = figures
		if fresh && (state == "joined" || state == "rejoined") {
			st, now = kept.st, kept.now.Add(q.Redis.Now().Sub(kept.at))
		}
	}
	if state == "joined" && q.Metrics != nil {
		q.Metrics.Joins.WithLabelValues(eventLabel(eventID)).Inc()
	}
	switch state {
	case "prequeue":
		if len(res) != 6 {
			return boxoffice.QueuePosition{}, fmt.Errorf("join pre-queue of event %d: unexpected reply %v", eventID, res)
		}
		ticket, _ := res[4].(string)
		return boxoffice.QueuePosition{Status: boxoffice.QueuePrequeue, Epoch: st.epoch, Ticket: ticket, Entrants: int(toInt64(res[5]))}, nil
	case "proof_used":
		return boxoffice.QueuePosition{}, boxoffice.NewError(boxoffice.ECHALLENGEFAILED, "err_challenge_failed")
	case "limit_reached":
		return boxoffice.QueuePosition{}, &boxoffice.Error{Code: boxoffice.ELIMITREACHED,
			Msg: boxoffice.M("err_limit_reached", "Limit", r.Limit), Details: map[string]any{"limit": r.Limit}}
	case "admitted":
		return boxoffice.QueuePosition{Status: boxoffice.QueueAdmitted, Epoch: st.epoch}, nil
	case "sold_out":
		return boxoffice.QueuePosition{Status: boxoffice.QueueSoldOut, Epoch: st.epoch}, nil
	}
	return st.waiting(seq, now), nil
}

// Position returns where the account stands, as Positions does for one fan.
// place is what the browser kept from Join (zero if nothing). When the
// figures this instance read in the current tick window (or the read of
// them another poll of this instance has under way, which this one waits
// for: see figuresFlight) have place's epoch and a head before its
// sequence, the fan is still waiting and the answer comes from them, with
// no round trip; otherwise one round trip, which refreshes the figures for
// the polls that wait for it. Errors:
// ENOTINQUEUE with Details["reason"] ReasonExpired (the fan was admitted and
// the token expired), ReasonDone (the turn ended with the fan's order),
// ReasonLeft (the fan left the sale or logged out), ReasonOtherSession (the
// live token is bound to a session other than place.SessionKey, if that is
// not empty) or ReasonNone.
func (q *Queue) Position(ctx context.Context, eventID, accountID int64, place boxoffice.QueuePlace) (boxoffice.QueuePosition, error) {
	var lead *figuresFlight
	if place.Epoch != "" && place.Sequence > 0 {
		f, ok, fl, leads := q.figuresFlight(eventID)
		if leads {
			lead = fl
		} else if fl != nil {
			f, ok = fl.wait(ctx)
		}
		if ok && place.Sequence > f.st.head && place.Epoch == f.st.epoch {
			return f.st.waiting(place.Sequence, f.now.Add(q.Redis.Now().Sub(f.at))), nil
		}
	}
	var p [1]boxoffice.QueuePosition
	if err := q.positions(ctx, eventID, []int64{accountID}, []string{place.Epoch}, place.SessionKey, p[:], lead); err != nil {
		return boxoffice.QueuePosition{}, err
	}
	switch p[0].Status {
	case boxoffice.QueueExpired:
		return boxoffice.QueuePosition{}, notInQueue(boxoffice.ReasonExpired)
	case boxoffice.QueueDone:
		return boxoffice.QueuePosition{}, notInQueue(boxoffice.ReasonDone)
	case boxoffice.QueueLeft:
		return boxoffice.QueuePosition{}, notInQueue(boxoffice.ReasonLeft)
	case boxoffice.QueueOtherSession:
		return boxoffice.QueuePosition{}, notInQueue(boxoffice.ReasonOtherSession)
	case boxoffice.QueueNotInQueue:
		return boxoffice.QueuePosition{}, notInQueue(boxoffice.ReasonNone)
	}
	return p[0], nil
}

// Positions returns the positions of many fans of one event in one Redis
// round trip (one read-only script, queue_positions.lua: TIME, HMGET of the
// shared figures, ZMSCORE of the line, and of the live tokens only when
// some fan is not in line), whatever the number of fans, so that an instance can push every connected fan's
// fragment each tick. fans maps account ids to the epoch each session kept
// from Join ("" if none). Every account gets an entry: QueueWaiting (or
// QueueSoldOut) with its position, QueueAdmitted, QueueReset (not found, and
// the session's epoch is not the queue's: Redis lost the line),
// QueueExpired, QueueDone, QueueLeft or QueueNotInQueue.
func (q *Queue) Positions(ctx context.Context, eventID int64, fans map[int64]string) (map[int64]boxoffice.QueuePosition, error) {
	if len(fans) == 0 {
		return map[int64]boxoffice.QueuePosition{}, nil
	}
	ids, epochs := make([]int64, 0, len(fans)), make([]string, 0, len(fans))
	for id, epoch := range fans {
		ids, epochs = append(ids, id), append(epochs, epoch)
	}
	ps := make([]boxoffice.QueuePosition, len(ids))
	if err := q.positions(ctx, eventID, ids, epochs, "", ps, nil); err != nil {
		return nil, err
	}
	out := make(map[int64]boxoffice.QueuePosition, len(ids))
	for i, id := range ids {
		out[id] = ps[i]
	}
	return out, nil
}

// positionsArgs is the start of queue_positions.lua's ARGV: the number of
// stats fields, then the fields.
var positionsArgs = func() []any {
	args := []any{len(statsFields)}
	for _, f := range statsFields {
		args = append(args, f)
	}
	return args
}()

// positions is Positions for at least one fan: it sets out[i] to the
// position of the account ids[i], whose session kept epochs[i] from Join
// (out, ids and epochs have the same length). A sessionKey, given only for
// one account, makes an admitted account whose token is bound to another
// session QueueOtherSession. fl, if not nil, is the refresh of the figures
// that this read leads, landed with its figures.
func (q *Queue) positions(ctx context.Context, eventID int64, ids []int64, epochs []string, sessionKey string, out []boxoffice.QueuePosition, fl *figuresFlight) error {
	gen := q.figuresGen(eventID)
	if fl != nil {
		gen = fl.gen
	}
	k := q.keysOf(eventID).boxed
	call, v := hotCall(4 + len(positionsArgs) + len(ids))
	call, replies := append(call, k.queue, k.live, k.stats), 2+2*len(ids)
	if sessionKey != "" {
		call, replies = append(call, q.entryKey(eventID, ids[0])), replies+1
	}
	keys := len(call) - hotCallStart
	call = append(call, positionsArgs...)
	for _, id := range ids {
		call = append(call, v.int(id))
	}
	res, err := runHot(ctx, q.hot(), queuePositionsScript, true, keys, call).Slice()
	var packed, bound string
	if err == nil {
		if len(res) == replies {
			packed, _ = res[1].(string)
			if sessionKey != "" {
				bound, _ = res[replies-1].(string)
			}
		} else {
			err = fmt.Errorf("unexpected reply %v", res)
		}
	}
	if err != nil {
		if fl != nil {
			q.land(eventID, fl, queueFigures{}, false)
		}
		return fmt.Errorf("queue positions of event %d: %w", eventID, err)
	}
	now := time.UnixMilli(toInt64(res[0]))
	st := statsFromPacked(packed)
	f := q.keepFigures(eventID, gen, st, now)
	if fl != nil {
		q.land(eventID, fl, f, true)
	}
	seqs, lives := res[2:2+len(ids)], res[2+len(ids):2+2*len(ids)]
	for i := range ids {
		seq, live := toInt64(seqs[i]), toInt64(lives[i])
		status := boxoffice.QueueNotInQueue
		switch epoch := epochs[i]; {
		case seq > 0:
			out[i] = st.waiting(seq, now)
			continue
		case live >= now.UnixMilli() && bound != "" && !equal(bound, sessionKey):
			status = boxoffice.QueueOtherSession
		case live >= now.UnixMilli():
			status = boxoffice.QueueAdmitted
		case epoch != "" && epoch != st.epoch:
			status = boxoffice.QueueReset
		case live >= 0:
			status = endedStatus(float64(live))
		}
		out[i] = boxoffice.QueuePosition{Status: status, Epoch: st.epoch}
	}
	return nil
}

// EntryToken returns the account's live entry token for the event and its
// remaining TTL, if the token was issued (or moved) to sessionKey, in one
// round trip. Errors: ENOENTRYTOKEN with Details["reason"]
// ReasonOtherSession, ReasonExpired or ReasonNone.
func (q *Queue) EntryToken(ctx context.Context, eventID, accountID int64, sessionKey string) (string, time.Duration, error) {
	e, err := q.readEntry(ctx, eventID, accountID)
	if err != nil {
		return "", 0, err
	}
	if e.token == "" {
		return "", 0, e.missing()
	}
	if !equal(e.session, sessionKey) {
		return "", 0, otherSession()
	}
	return e.token, e.ttl, nil
}

// CheckEntry returns nil if the account holds a live entry token for the
// event that was issued (or moved) to sessionKey (rule 5), in one round
// trip. Errors: ENOENTRYTOKEN with Details["reason"] ReasonOtherSession,
// ReasonExpired or ReasonNone.
func (q *Queue) CheckEntry(ctx context.Context, eventID, accountID int64, sessionKey string) error {
	_, _, err := q.EntryToken(ctx, eventID, accountID, sessionKey)
	return err
}

// entry is an account's entry token as read from Redis.
type entry struct {
	token, session string
	ttl            time.Duration
	ended          string // without a live token: why the one issued ended (Reason*), "" if none was
}

// otherSession is the refusal of a session that does not hold the
// account's turn: the token was issued to, or moved to, another session.
func otherSession() error {
	return noEntry(boxoffice.ReasonOtherSession)
}

func (e entry) missing() error {
	if e.ended == "" {
		return noEntryYet()
	}
	return noEntry(e.ended)
}

// endedStatus is the waiting room's status of an account whose issued
// entry token ended, by its score in entry:live:{e} (see endedReason).
func endedStatus(score float64) string {
	switch endedReason(score) {
	case boxoffice.ReasonDone:
		return boxoffice.QueueDone
	case boxoffice.ReasonLeft:
		return boxoffice.QueueLeft
	}
	return boxoffice.QueueExpired
}

// endedReason says why an issued entry token ended, by its score in
// entry:live:{e}: 0 when the fan's order was confirmed (hold_sold.lua), 1
// when the fan left the sale or logged out (hold_leave.lua), otherwise the
// time it ran out.
func endedReason(score float64) string {
	switch score {
	case 0:
		return boxoffice.ReasonDone
	case 1:
		return boxoffice.ReasonLeft
	}
	return boxoffice.ReasonExpired
}

// noEntryYet refuses an account that holds no entry token and had none.
func noEntryYet() error {
	return noEntry(boxoffice.ReasonNone)
}

// readEntry reads the account's entry token for the event in one read-only
// script (queue_entry.lua).
func (q *Queue) readEntry(ctx context.Context, eventID, accountID int64) (entry, error) {
	call, args := hotCall(3)
	call = append(call, q.entryKey(eventID, accountID), q.keysOf(eventID).boxed.live, args.int(accountID))
	res, err := runHot(ctx, q.hot(), queueEntryScript, true, 2, call).Slice()
	if err != nil {
		return entry{}, fmt.Errorf("read entry token of account %d for event %d: %w", accountID, eventID, err)
	}
	switch {
	case len(res) == 0:
		return entry{}, nil
	case len(res) != 2:
		return entry{}, fmt.Errorf("read entry token of account %d for event %d: unexpected reply %v", accountID, eventID, res)
	}
	v, ok := res[0].(string)
	if !ok {
		return entry{ended: endedReason(float64(toInt64(res[1])))}, nil
	}
	token, session, _ := strings.Cut(v, "|")
	return entry{token: token, session: session, ttl: pttl(toInt64(res[1]))}, nil
}

// EntrySessions returns, for each of accounts (of one event), the session
// key its live entry token is bound to, or "" when it holds none, in one
// Redis round trip (MGET of the accounts' entry:{e}:<account> keys, one
// hash slot). The waiting room's stream reads it for the fans that
// Positions shows admitted, so that a session that did not get the turn
// is told so (QueueOtherSession) rather than sent to the seat map.
func (q *Queue) EntrySessions(ctx context.Context, eventID int64, accounts []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(accounts))
	if len(accounts) == 0 {
		return out, nil
	}
	keys := make([]string, len(accounts))
	for i, a := range accounts {
		keys[i] = q.entryKey(eventID, a)
	}
	vals, err := q.Redis.Client.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read the entry tokens of %d accounts for event %d: %w", len(accounts), eventID, err)
	}
	for i, v := range vals {
		if s, ok := v.(string); ok {
			_, out[accounts[i]], _ = strings.Cut(s, "|")
		} else {
			out[accounts[i]] = ""
		}
	}
	return out, nil
}

// pttl is the duration of a PTTL reply of n, as go-redis's PTTL gives it:
// -1 (no expiry) and -2 (no key) stay as they are, in nanoseconds.
func pttl(n int64) time.Duration {
	if n < 0 {
		return time.Duration(n)
	}
	return time.Duration(n) * time.Millisecond
}

// SetPaused writes the paused mark of the event's shared figures
// (queue:stats:{e}), which the admitter writes again from PostgreSQL each
// tick, and drops this instance's figures, so that the next join (its
// script reads the mark) and the polls here say so at once; other
// instances' polls follow within a tick. One round trip.
func (q *Queue) SetPaused(ctx context.Context, eventID int64, paused bool) error {
	if err := q.Redis.Client.HSet(ctx, q.statsKey(eventID), "paused", boolArg(paused)).Err(); err != nil {
		return fmt.Errorf("set paused of event %d: %w", eventID, err)
	}
	q.forgetFigures(eventID)
	return nil
}

// QueueStats returns the event's waiting-room figures in one round trip.
func (q *Queue) QueueStats(ctx context.Context, eventID int64) (boxoffice.QueueStats, error) {
	keys := []string{q.queueKey(eventID), q.seqKey(eventID), q.statsKey(eventID), q.liveKey(eventID)}
	res, err := queueStatsScript.RunRO(ctx, q.Redis.Client, keys).Slice()
	if err != nil {
		return boxoffice.QueueStats{}, fmt.Errorf("queue stats of event %d: %w", eventID, err)
	}
	if len(res) != 5 {
		return boxoffice.QueueStats{}, fmt.Errorf("queue stats of event %d: unexpected reply %v", eventID, res)
	}
	now := time.UnixMilli(toInt64(res[0]))
	st := parseStats(res[4])
	return boxoffice.QueueStats{
		Waiting:       int(toInt64(res[1])),
		Joined:        toInt64(res[2]),
		AdmittedTotal: st.admitted,
		LiveTokens:    int(toInt64(res[3])),
		AchievedRate:  st.pace.AchievedRate(now),
		Rate:          st.pace.Rate,
		Paused:        st.pace.Paused,
		SoldOut:       st.soldOut,
	}, nil
}

// Draw places the event's pre-queue in line if drawAt has come by Redis's
// clock and it was not drawn yet, in one Lua script (queue_draw.lua), so
// that it happens once whatever the number of instances and callers, and
// before any join that comes after it gets a place. It reports whether the
// event is drawn (false: too early).
func (q *Queue) Draw(ctx context.Context, eventID int64, drawAt time.Time) (bool, error) {
	epoch, err := randomToken()
	if err != nil {
		return false, err
	}
	keys := []string{q.queueKey(eventID), q.seqKey(eventID), q.sessKey(eventID), q.statsKey(eventID), q.preKey(eventID), q.preAcctKey(eventID)}
	n, err := queueDrawScript.Run(ctx, q.Redis.Client, keys, drawAt.UnixMilli(), epoch).Int()
	if err != nil {
		return false, fmt.Errorf("draw the pre-queue of event %d: %w", eventID, err)
	}
	return n == 1, nil
}

// DrawState returns whether the event's pre-queue was drawn, its number of
// entrants and, once drawn, every draw ticket in drawn order, at one
// instant (one read-only script).
func (q *Queue) DrawState(ctx context.Context, eventID int64) (drawn bool, entrants int, tickets []string, err error) {
	res, err := queueDrawStateScript.RunRO(ctx, q.Redis.Client, []string{q.statsKey(eventID), q.preKey(eventID)}).Slice()
	if err != nil || len(res) < 2 {
		return false, 0, nil, fmt.Errorf("read the draw of event %d: %v %w", eventID, res, err)
	}
	for _, v := range res[2:] {
		t, _ := v.(string)
		tickets = append(tickets, t)
	}
	return res[0] == "1", int(toInt64(res[1])), tickets, nil
}

// PrequeueTicket returns the account's draw ticket for the event and the
// pre-queue's number of entrants; "" if the account has none. One round
// trip.
func (q *Queue) PrequeueTicket(ctx context.Context, eventID, accountID int64) (string, int, error) {
	var get *redis.StringCmd
	var card *redis.IntCmd
	_, err := q.Redis.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.HGet(ctx, q.preAcctKey(eventID), strconv.FormatInt(accountID, 10))
		card = p.ZCard(ctx, q.preKey(eventID))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", 0, fmt.Errorf("read the draw ticket of account %d for event %d: %w", accountID, eventID, err)
	}
	ticket, _, _ := strings.Cut(get.Val(), "|")
	return ticket, int(card.Val()), nil
}

// AdmitResult is what one tick's admission did for an event.
type AdmitResult struct {
	// Done is false when the tick was over before this call (a later tick
	// was admitted for the event, or this one's whole batch, or it was cut
	// short by the cap or the end of the line), by this instance or
	// another: nothing was changed.
	Done     bool
	Admitted []int64 // accounts admitted, in line order
	Waiting  int     // fans still in line
	Live     int     // live entry tokens after the batch
}

// Admit admits tick number tick's batch of the event: the batch
// (boxoffice.AdmissionBatch of s.Rate, limited by s.MaxShoppers live tokens)
// is taken from the head of the line; each fan gets an entry token (128 bits
// from crypto/rand) bound to the session of their place, with PXAT = now +
// s.TokenTTL, and leaves the line. It runs queue_admit.lua once for each
// part of at most AdmitPart fans, each part all or nothing, so that a large
// batch never holds Redis in one long script while every fan's request
// waits (2,000 fans in one script took 24 to 126 ms on the 2-core machine:
// docs/performance.md, "The admission tick in parts"). No tick admits more
// than its batch, whoever runs its parts: a tick before the last one
// admitted for the event, or the last one once its batch is in or it was cut
// short (the cap, or the end of the line), changes nothing (Done false), so
// racing admitters never admit twice; only a full part leaves the tick
// open, and racing admitters may each add a part to it. A part refused
// after earlier ones ends the tick with what they admitted.
// Paused or sold-out settings admit nobody and are published to Position
// (QueueSoldOut, Paused). A part that fails after earlier ones admitted
// returns what they admitted (counted in the metrics) with its error.
func (q *Queue) Admit(ctx context.Context, s boxoffice.AdmissionSettings, tick int64, every time.Duration) (AdmitResult, error) {
	if every < time.Millisecond || s.TokenTTL < time.Millisecond {
		return AdmitResult{}, fmt.Errorf("admit event %d: tick %v and token TTL %v must be at least 1ms", s.EventID, every, s.TokenTTL)
	}
	if !s.DrawAt.IsZero() {
		if _, err := q.Draw(ctx, s.EventID, s.DrawAt); err != nil {
			return AdmitResult{}, err
		}
	}
	batch := boxoffice.AdmissionBatch(s.Rate, every, tick)
	if s.Paused || s.SoldOut {
		batch = 0
	}
	var r AdmitResult
	var partErr error // a later part's, after earlier parts admitted
	for left := batch; ; {
		part := min(left, AdmitPart)
		res, err := q.admitPart(ctx, s, tick, every, batch, part)
		if err != nil {
			if !r.Done {
				return AdmitResult{}, err
			}
			partErr = err
			break
		}
		if toInt64(res[0]) < 0 {
			break
		}
		r.Done, r.Waiting, r.Live = true, int(toInt64(res[1])), int(toInt64(res[2]))
		for _, v := range res[3:] {
			r.Admitted = append(r.Admitted, toInt64(v))
		}
		admitted := int(toInt64(res[0]))
		if left -= admitted; left <= 0 || admitted < part {
			break
		}
	}
	if !r.Done {
		return AdmitResult{}, nil
	}
	q.forgetFigures(s.EventID)
	if m := q.Metrics; m != nil {
		label := eventLabel(s.EventID)
		m.Admissions.WithLabelValues(label).Add(float64(len(r.Admitted)))
		m.Waiting.WithLabelValues(label).Set(float64(r.Waiting))
		m.LiveTokens.WithLabelValues(label).Set(float64(r.Live))
	}
	return r, partErr
}

// AdmitPart is the most fans that one run of queue_admit.lua admits: about
// 2.5 ms of Redis's time (a whole tick of 2,000 fans took at least 24 ms in
// a load test), so that a tick's batch of thousands is admitted in parts
// between the other commands.
const AdmitPart = 200

// admitPart runs queue_admit.lua for part of tick's batch (batch fans in
// all): part fresh tokens, and the keys of the first part fans in line,
// read again when the head moved meanwhile (-2). It returns the script's
// reply, at least three elements.
func (q *Queue) admitPart(ctx context.Context, s boxoffice.AdmissionSettings, tick int64, every time.Duration, batch, part int) ([]any, error) {
	args := make([]any, 0, 10+part)
	args = append(args, tick, batch, max(s.MaxShoppers, 0), s.TokenTTL.Milliseconds(), q.Redis.entryPrefix(s.EventID),
		boolArg(s.Paused), boolArg(s.SoldOut), s.Rate, every.Milliseconds(), recordField(tick))
	for range part {
		t, err := randomToken()
		if err != nil {
			return nil, err
		}
		args = append(args, t)
	}
	for attempt := 0; ; attempt++ {
		keys, err := q.admitKeys(ctx, s.EventID, part)
		if err != nil {
			return nil, fmt.Errorf("admit event %d, tick %d: %w", s.EventID, tick, err)
		}
		res, err := queueAdmitScript.Run(ctx, q.Redis.Client, keys, args...).Slice()
		if err != nil {
			return nil, fmt.Errorf("admit event %d, tick %d: %w", s.EventID, tick, err)
		}
		if len(res) < 3 {
			return nil, fmt.Errorf("admit event %d, tick %d: unexpected reply %v", s.EventID, tick, res)
		}
		if toInt64(res[0]) != -2 {
			return res, nil
		}
		if attempt == admitAttempts-1 {
			return nil, fmt.Errorf("admit event %d, tick %d: the head of the line changed %d times while it was read", s.EventID, tick, admitAttempts)
		}
	}
}

// admitAttempts bounds how many times Admit reads the head of the line again
// when fans left it between the read and the script: each retry follows
// another admitter's batch (or fans leaving the head) in that moment, so an
// instance racing one or two others rarely needs a second; the bound only
// stops a loop, and TestQueue_Admit_RacingTicks, which races 100 ticks of
// two instances at once, saw a tick lose five times in a row once in 50
// runs.
const admitAttempts = 16

// admitKeys returns the keys of queue_admit.lua: the event's four queue keys
// and then the entry key of each of the first batch fans in line (read with
// one ZRANGE), so that the script declares every key it writes.
func (q *Queue) admitKeys(ctx context.Context, eventID int64, batch int) ([]string, error) {
	keys := []string{q.queueKey(eventID), q.sessKey(eventID), q.statsKey(eventID), q.liveKey(eventID)}
	if batch <= 0 {
		return keys, nil
	}
	head, err := q.Redis.Client.ZRange(ctx, q.queueKey(eventID), 0, int64(batch)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("read the head of the line: %w", err)
	}
	prefix := q.Redis.entryPrefix(eventID)
	for _, acct := range head {
		keys = append(keys, prefix+acct)
	}
	return keys, nil
}

// recordField names the stats field that records tick: a ring of
// boxoffice.RateWindow fields.
func recordField(tick int64) string {
	return "r" + strconv.FormatInt((tick%boxoffice.RateWindow+boxoffice.RateWindow)%boxoffice.RateWindow, 10)
}

// queueStats are the fields of queue:stats:{e}.
type queueStats struct {
	epoch    string
	head     int64 // sequence of the last fan admitted
	admitted int64
	soldOut  bool
	pace     boxoffice.AdmissionPace
}

// parseStats reads an HGETALL reply returned by a script (a flat array).
func parseStats(v any) queueStats {
	a, _ := v.([]any)
	m := make(map[string]string, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		k, _ := a[i].(string)
		m[k], _ = a[i+1].(string)
	}
	return statsFromMap(m)
}

func statsFromMap(m map[string]string) queueStats {
	return statsFrom(func(k string) string { return m[k] })
}

// statsFields are the fields of queue:stats:{e} that queueStats holds, in
// the order queue_positions.lua reads them (HMGET): seven figures, then the
// ring of tick records (recordFields).
var statsFields = func() []string {
	f := statsFigures[:]
	for i := range boxoffice.RateWindow {
		f = append(f, "r"+strconv.Itoa(i))
	}
	return f
}()

// statsFigures are the fields of statsFields before the tick records.
var statsFigures = [...]string{"epoch", "head", "admitted", "sold_out", "tick_ms", "rate", "paused"}

// statsFieldCount is len(statsFields).
const statsFieldCount = len(statsFigures) + boxoffice.RateWindow

// recordFields are the fields of the tick records, r0 to r9 (recordField).
var recordFields = statsFields[len(statsFields)-boxoffice.RateWindow:]

// statsFieldIndex maps each of statsFields to its index.
var statsFieldIndex = func() map[string]int {
	m := make(map[string]int, len(statsFields))
	for i, f := range statsFields {
		m[f] = i
	}
	return m
}()

// statsFromPacked reads the values of statsFields joined by "|" ("" where a
// field is unset), as queue_positions.lua returns them.
func statsFromPacked(packed string) queueStats {
	var vals [statsFieldCount]string
	for i := range vals {
		vals[i], packed, _ = strings.Cut(packed, "|")
	}
	return statsFrom(func(k string) string { return vals[statsFieldIndex[k]] })
}

// statsFrom reads queueStats from field, which returns a field's value ("" if
// unset).
func statsFrom(field func(string) string) queueStats {
	num := func(k string) int64 { n, _ := strconv.ParseInt(field(k), 10, 64); return n }
	st := queueStats{
		epoch:    field("epoch"),
		head:     num("head"),
		admitted: num("admitted"),
		soldOut:  field("sold_out") == "1",
		pace: boxoffice.AdmissionPace{
			Tick:   time.Duration(num("tick_ms")) * time.Millisecond,
			Rate:   int(num("rate")),
			Paused: field("paused") == "1",
		},
	}
	if st.pace.Tick == 0 {
		st.pace.Tick = boxoffice.DefaultAdmissionTick
	}
	st.pace.Records = make([]boxoffice.AdmissionRecord, 0, boxoffice.RateWindow)
	for i := range boxoffice.RateWindow {
		tickText, rest, ok1 := strings.Cut(field(recordFields[i]), ":")
		nText, backlog, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || strings.Contains(backlog, ":") {
			continue
		}
		tick, err1 := strconv.ParseInt(tickText, 10, 64)
		n, err2 := strconv.Atoi(nText)
		if err1 == nil && err2 == nil {
			st.pace.Records = append(st.pace.Records, boxoffice.AdmissionRecord{Tick: tick, Admitted: n, Backlog: backlog == "1"})
		}
	}
	return st
}

// waiting returns the position of the fan with join sequence seq at now.
func (st queueStats) waiting(seq int64, now time.Time) boxoffice.QueuePosition {
	// Positions are exact while the head is known; should the stats alone be
	// lost the head reads 0 and positions are too large, never below 1.
	pos := int(max(seq-st.head, 1))
	p := boxoffice.QueuePosition{
		Status:   boxoffice.QueueWaiting,
		Position: pos,
		Ahead:    pos - 1,
		Sequence: seq,
		Paused:   st.pace.Paused,
		Epoch:    st.epoch,
	}
	if st.soldOut {
		p.Status = boxoffice.QueueSoldOut
	} else {
		p.ETA = st.pace.EstimateWait(pos, now)
	}
	return p
}

// notInQueue and noEntry carry the reason and no sentence: views words
// both refusals, once (views.NoEntryMsg).
func notInQueue(reason string) error {
	return &boxoffice.Error{Code: boxoffice.ENOTINQUEUE, Details: map[string]any{"reason": reason}}
}

func noEntry(reason string) error {
	return &boxoffice.Error{Code: boxoffice.ENOENTRYTOKEN, Details: map[string]any{"reason": reason}}
}

// randomToken returns 128 random bits from crypto/rand, base64url-encoded
// (22 characters, never '|').
func randomToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("entry token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// twoRandomTokens returns two independent tokens as randomToken makes them
// (128 bits from crypto/rand each, base64url-encoded), from one draw of 256
// bits and in one allocation: the join's new queue epoch and fresh entry
// token, which its script uses only on a queue's first join, a draw or a
// turn moved to another session, and which it cannot ask for without a
// second round trip. crypto/rand's Read does not fail (Go 1.24).
func twoRandomTokens() (string, string) {
	const n = 22 // base64.RawURLEncoding.EncodedLen(tokenBytes)
	var raw [2 * tokenBytes]byte
	rand.Read(raw[:])
	var text [2 * n]byte
	base64.RawURLEncoding.Encode(text[:n], raw[:tokenBytes])
	base64.RawURLEncoding.Encode(text[n:], raw[tokenBytes:])
	s := string(text[:])
	return s[:n], s[n:]
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// boxedBool is boolArg(b) as a script call's argument, boxed once.
func boxedBool(b bool) any {
	if b {
		return boxedTrue
	}
	return boxedFalse
}

var boxedTrue, boxedFalse any = boolArg(true), boolArg(false)

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func eventLabel(id int64) string { return strconv.FormatInt(id, 10) }

// toInt64 reads an integer from a script reply (an integer, or a string such
// as a ZSCORE).
func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}
