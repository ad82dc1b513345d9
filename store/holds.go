package store

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
)

var _ boxoffice.HoldService = (*Holds)(nil)

//go:embed lua/hold*.lua
var holdLua embed.FS

var (
	holdScript          = newHotScript(loadScript(holdLua, "lua/hold_shopper.lua", "lua/hold.lua"))
	holdBestScript      = newHotScript(loadScript(holdLua, "lua/hold_shopper.lua", "lua/hold_best.lua"))
	holdBestIndexScript = loadScript(holdLua, "lua/hold_best_index.lua")
	holdReleaseScript   = newHotScript(loadScript(holdLua, "lua/hold_index.lua", "lua/hold_shopper.lua", "lua/hold_release.lua"))
	holdExtendScript    = loadScript(holdLua, "lua/hold_extend.lua")
	holdSoldScript      = loadScript(holdLua, "lua/hold_sold.lua")
	holdMineScript      = loadScript(holdLua, "lua/hold_mine.lua")
	holdCacheScript     = loadScript(holdLua, "lua/hold_cache.lua")
	holdReleaseOrder    = loadScript(holdLua, "lua/hold_index.lua", "lua/hold_release_order.lua")
	holdLeaveScript     = loadScript(holdLua, "lua/hold_index.lua", "lua/hold_shopper.lua", "lua/hold_leave.lua")
	holdUnsoldScript    = loadScript(holdLua, "lua/hold_index.lua", "lua/hold_unsold.lua")
	holdOrderEndScript  = loadScript(holdLua, "lua/hold_order_end.lua")
)

// loadScript returns the script made of the embedded files names, in order
// (a file of functions, then the script that calls them).
func loadScript(fsys embed.FS, names ...string) *redis.Script {
	var src strings.Builder
	for _, name := range names {
		b, err := fsys.ReadFile(name)
		if err != nil {
			panic(fmt.Sprintf("embedded script %s: %v", name, err))
		}
		src.Write(b)
	}
	return redis.NewScript(src.String())
}

// DefaultSoldCacheTTL is how long Redis's copy of an event's sold seats and
// bought counts is trusted before it is merged again with PostgreSQL's (and
// for as long again as PostgreSQL cannot be reached: see Holds).
const DefaultSoldCacheTTL = 5 * time.Minute

// loadTimeout bounds a load from PostgreSQL that several callers share.
const loadTimeout = 30 * time.Second

// Holds holds seats in Redis and implements boxoffice.HoldService. Every rule
// is one Lua script, so that any number of instances and goroutines may call
// it at once. Its keys, all with the event's hash tag {e}:
//
//	seat:lock:{e}:<label>  string: the holding account id, expiring with the hold
//	seat:order:{e}:<label> string: the order whose checkout extended the hold
//	                       (ExtendHolds), expiring at the same millisecond;
//	                       while both expire together the account cannot
//	                       release the seat (Release, Leave)
//	hold:{e}:<account>     zset label -> expiry (Unix ms): the account's holds
//	hold:order:{e}:<account> hash label -> order id: those of the holds that
//	                       ExtendHolds put in the account's order awaiting
//	                       payment (the seat:order keys' index, for the hold
//	                       panel), expiring with the last of them
//	held:{e}               zset label -> expiry (Unix ms): every held seat
//	holder:{e}             hash label -> account id, pruned with held:{e}
//	sold:{e}               set of sold labels
//	bought:{e}             hash account id -> tickets bought
//	cache:ready:{e}        marker that sold:{e} and bought:{e} were loaded
//	                       within SoldCacheTTL (expiring then)
//	cache:complete:{e}     marker that they were loaded once (no expiry); its
//	                       value names the load that set it
//	cache:loading:{e}:<id> a load under way, expiring after loadTimeout
//	claimed:{e}            zset label -> claim time (Unix ms): seats claimed for
//	                       a sale (claimSeats) that sold:{e} may not have yet
//	refunds:{e}            count of refunds applied (unsell), which a load
//	                       of sold:{e} checks it did not miss
//	blocked:{e}            set of labels an admin blocked (Blocks): held and
//	                       claimed by nobody, shown sold on the map
//	blocking:{e}           zset label -> start (Unix ms): blocks whose
//	                       transaction may not have committed yet
//	unblocks:{e}           count of changes that took seats out of
//	                       blocked:{e}, which a load checks it did not miss
//	blocks:lock:{e}        the change of blocked seats under way (its token)
//	best:{e}:<grade>:<q>   zset first label of a run -> its rank: best
//	                       available's index of the runs of the grade that
//	                       may still have q seats side by side neither sold
//	                       nor blocked, and a sentinel (see bestIndexKey)
//	best:gen:{e}           the index's generation, raised when it must be
//	                       built again
//	order:holds:{e}:<order>
//	                       marker that an order's holds are no longer its
//	                       expiry's to end: released by it (releaseOrder) or
//	                       claimed for its sale (claimSeats); expiring after
//	                       orderMarkerTTL
//
// Expiries are on Redis's clock (TIME in the scripts; PXAT on the locks, so a
// lock and its zset entries end at the same millisecond): a hold ends by
// itself, and the account's count follows with no sweeper.
//
// Sold seats and bought tickets are PostgreSQL's (sold_seat and
// purchase_count.tickets), copied into sold:{e} and bought:{e} by a load
// (loadSoldCache), which sets both markers in the script that writes the
// copy. cache:ready:{e} expires after SoldCacheTTL, so that the copy is
// merged with PostgreSQL's again; cache:complete:{e} stays. The hold script
// refuses to run without the marker it is given, and Holds then loads the
// copy from PostgreSQL and tries once more, so that a sold seat is never held
// after Redis lost its data; a load during which Redis lost its data sets no
// marker (loadSoldCacheOnce). Loading only adds, so loads racing each other
// or MarkSold lose nothing; a seat refunded is taken out by the refund
// (unsell), and a load that read before it writes nothing.
//
// When that load fails because PostgreSQL cannot be reached (unreachable),
// Hold and SeatStatuses use the copy as it is if cache:complete:{e} is
// there, checked in the one script or MULTI/EXEC that reads the copy: holds
// and the seat map keep working from Redis through an outage of any length.
// A copy that was complete once is safe to use late because each sale joins
// the copy as it commits (MarkSold, by whichever instance confirmed it), and
// each refund of sold tickets (store.Refunds, the only deleter of sold_seat
// rows) leaves it as it commits (unsell), raising refunds:{e} so that no
// load that read PostgreSQL before the refund writes the refunded seat back;
// a refund whose unsell failed leaves its seats showing as sold (never the
// other way round). A sale whose MarkSold failed or never ran (its process died right
// after the commit) is still known: its seats were claimed in Redis before
// the commit (claimSeats), and claimed:{e} keeps a record of each claim
// until MarkSold, or until a load that read PostgreSQL after the commit
// drops it (hold_cache.lua). The claim itself keeps the seats from others
// only for as long as a fresh copy may miss the sale; on a copy past its TTL
// the hold script refuses a recorded seat, although the seat map may show it
// free. Such a sale's tickets are missing from bought:{e} until a load, so
// its buyer may hold past the limit on a late copy, which only the
// confirmation's limit check then refuses (as for a Redis restored from an
// older snapshot, which may miss sales: sold_seat's UNIQUE key refuses those).
// Without cache:complete:{e} Redis lost its data (FLUSHALL, a restart without
// persistence), and the copy is gone or partial (a MarkSold since may have
// added to it): then nothing is used, and holds and the seat map answer the
// load's error (503) until PostgreSQL is back.
//
// The labels of each event's seats are read from PostgreSQL once per event
// and process and kept in memory once the seats are fixed (its queue opened
// or it has an order: Events.UpdateEvent then refuses a new venue), so
// validating a hold costs no query.
//
// Redis must not evict keys (maxmemory-policy noeviction): an evicted index
// would break the count of an account's holds.
type Holds struct {
	DB    *DB
	Redis *Redis
	// SoldCacheTTL is how long cache:ready:{e} lives (DefaultSoldCacheTTL
	// when 0): a sale whose MarkSold never ran reaches Redis at the next load.
	SoldCacheTTL time.Duration
	// MapMaxAge is how old SeatStatuses lets its shared read of an event's
	// held and sold seats be (NewHolds sets DefaultMapMaxAge); 0 or less reads
	// them on every call. Set it before first use.
	MapMaxAge time.Duration
	// Pipe, if not nil, sends a fan's hold scripts (hold.lua, hold_best.lua
	// and hold_release.lua: Hold, HoldBest and Release) in place of
	// Redis.Client, as
	// Queue.Pipe does the queue's: the binary sets the client's automatic
	// pipelining (Redis.AutoPipeline), so that the holds in flight at once
	// share one write and one read to Redis instead of each paying its own
	// syscalls (Redis's and the server's) and the pool's check of the
	// connection. Each hold still waits for its own reply; the scripts,
	// their keys and their rules are the same. Its hooks see no request's
	// context, so tests that count a request's commands through a hook leave
	// it nil. Set it before first use.
	Pipe HotScripter

	loads  singleflight.Group
	mu     sync.Mutex
	labels map[int64]map[string]struct{} // event id -> its seats' labels
	maps   map[int64]*sharedMapSlot      // event id -> shared read for SeatStatuses
	runs   map[int64]*eventRunsCopy      // event id -> its seats for best available
	hints  map[bestHintKey]bestHint      // where HoldBest starts
	keys   perEvent[holdKeys]

	granted prometheus.Counter
	refused *prometheus.CounterVec

	// afterSoldRead, if set (tests), runs between a load's PostgreSQL read
	// and its write to Redis.
	afterSoldRead func()
}

// NewHolds returns a Holds on db and r whose metrics are registered on reg
// (none when reg is nil): boxoffice_holds_granted_total, hold requests
// granted, and boxoffice_holds_refused_total{reason}, hold requests refused
// by error code (seat_taken, limit_exceeded, bad_seat, not_together,
// bad_choice).
func NewHolds(db *DB, r *Redis, reg prometheus.Registerer) (*Holds, error) {
	h := &Holds{
		DB:        db,
		Redis:     r,
		MapMaxAge: DefaultMapMaxAge,
		labels:    map[int64]map[string]struct{}{},
		maps:      map[int64]*sharedMapSlot{},
		runs:      map[int64]*eventRunsCopy{},
		hints:     map[bestHintKey]bestHint{},
		granted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_holds_granted_total",
			Help: "Seat hold requests granted.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_holds_refused_total",
			Help: "Seat hold requests refused, by reason (the error code).",
		}, []string{"reason"}),
	}
	for _, reason := range []string{boxoffice.ESEATTAKEN, boxoffice.ELIMITEXCEEDED, boxoffice.EBADSEAT, boxoffice.ENOTTOGETHER, boxoffice.EBADCHOICE} {
		h.refused.WithLabelValues(reason)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{h.granted, h.refused} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register hold metrics: %w", err)
			}
		}
	}
	return h, nil
}

// Hold holds every seat in labels for req.AccountID for req.TTL, or none, in
// one Lua script: each seat's key seat:lock:{e}:<label> is set to the account
// with an absolute expiry on Redis's clock, and the hold is recorded in the
// account's zset and the map's indexes. A seat the account already holds is
// no error: it counts once and keeps its expiry (so holding again never makes
// a hold last longer).
//
// The script first checks the entry: the account's entry token must be live
// and bound to req.SessionKey (unless it is empty; see boxoffice.Shopper).
// The result's Mine is the account's own part of the seat map after the
// call, read in the same script (also with ESEATTAKEN and ELIMITEXCEEDED).
//
// Input is checked before Redis is touched. Errors (*boxoffice.Error):
// ENOENTRYTOKEN with Details["reason"]; EBADSEAT for no seats, more than req.Limit, or malformed, duplicate or
// unknown labels (seats of another event are unknown), with Details["seats"]
// the bad labels where there are any; ESEATTAKEN with Details["seats"] the
// labels held by another account, sold or blocked (and Details["blocked"]
// those blocked, if any, whose sentence says they are not for sale); ELIMITEXCEEDED when the account's
// live holds plus its bought tickets plus the new seats would pass req.Limit,
// with Details "limit", "owned" (bought) and "held" (live holds). A
// non-positive req.Limit or a req.TTL under 1 ms is a programming error.
// Without the sold-seat cache, while PostgreSQL cannot be reached: the copy
// left in Redis is used if it was complete (see Holds), else the load's
// error is returned.
func (h *Holds) Hold(ctx context.Context, req boxoffice.HoldRequest, labels []string) (boxoffice.HoldResult, error) {
	if req.Limit < 1 || req.TTL < time.Millisecond {
		return boxoffice.HoldResult{}, fmt.Errorf("hold seats: limit %d and TTL %v must be positive", req.Limit, req.TTL)
	}
	if err := h.checkLabels(ctx, req.EventID, labels, req.Limit); err != nil {
		h.refuse(err)
		return boxoffice.HoldResult{}, err
	}
	e := req.EventID
	k := h.keysOf(e)
	call, v := hotCall(shopperKeyCount + len(labels) + shopperArgCount + len(labels))
	ak := k.account(req.AccountID)
	call = appendShopperKeys(call, k, ak)
	for _, l := range labels {
		call = append(call, k.lockPrefix+l)
	}
	call = append(call, ak.holdOrder)
	call = appendShopperArgs(call, v, req)
	for _, l := range labels {
		call = append(call, v.str(l))
	}
	res, err := h.runHoldScript(ctx, holdScript, e, shopperKeyCount+len(labels)+1, call)
	if err != nil {
		return boxoffice.HoldResult{}, err
	}
	mine, err := mineState(res[1], res[2], res[3])
	if err != nil {
		return boxoffice.HoldResult{}, fmt.Errorf("hold seats of event %d: %w", e, err)
	}
	switch res[0] {
	case "taken":
		err := holdTaken(stringsOf(res[4]), stringsOf(res[5]))
		h.refuse(err)
		return boxoffice.HoldResult{Mine: mine}, err
	case "limit":
		err := &boxoffice.Error{
			Code:    boxoffice.ELIMITEXCEEDED,
			Msg:     boxoffice.M("hold_limit", "Limit", req.Limit),
			Details: map[string]any{"limit": req.Limit, "owned": mine.Owned, "held": len(mine.Mine)},
		}
		h.refuse(err)
		return boxoffice.HoldResult{Mine: mine}, err
	}
	first := toInt64(res[4])
	h.granted.Inc()
	return boxoffice.HoldResult{
		Held:      slices.Clone(labels),
		Added:     int(toInt64(res[5])),
		TTL:       time.Duration(first-mine.Now.UnixMilli()) * time.Millisecond,
		ExpiresAt: time.UnixMilli(first),
		Mine:      mine,
	}, nil
}

// holdKeys are the keys of an event's holds that a fan's hold and release
// scripts name, built once per event and instance (Holds.keysOf): a hold
// names ten of them, and each formatted anew cost a tenth of its CPU.
type holdKeys struct {
	ready, complete, sold, bought, held, holder, claimed, live, blocked, bestGen string
	// The starts of the keys of an account (hold:{e}:<account>,
	// entry:{e}:<account>) and of a seat (seat:lock:{e}:<label>,
	// seat:order:{e}:<label>).
	holdPrefix, entryPrefix, lockPrefix, orderPrefix string
	// The start of an account's seats in its order awaiting payment
	// (hold:order:{e}:<account>).
	holdOrderPrefix string
	// boxed holds the event's keys boxed once as a call's arguments
	// (hotCall).
	boxed struct {
		ready, complete, sold, bought, held, holder, claimed, live, blocked, bestGen any
	}
}

// keysOf returns event e's holdKeys, kept for every event the instance has
// served (a few strings an event).
func (h *Holds) keysOf(e int64) *holdKeys {
	return h.keys.get(e, func() *holdKeys {
		r := h.Redis
		k := &holdKeys{
			ready: r.Key("cache:ready:{%d}", e), complete: r.Key("cache:complete:{%d}", e),
			sold: r.Key("sold:{%d}", e), bought: r.boughtKey(e),
			held: r.Key("held:{%d}", e), holder: r.Key("holder:{%d}", e),
			claimed: r.Key("claimed:{%d}", e), live: r.entryLiveKey(e),
			blocked: h.blockedKey(e), bestGen: h.bestGenKey(e),
			holdPrefix: r.Key("hold:{%d}:", e), entryPrefix: r.entryPrefix(e),
			lockPrefix: r.Key("seat:lock:{%d}:", e), orderPrefix: r.Key("seat:order:{%d}:", e),
			holdOrderPrefix: r.Key("hold:order:{%d}:", e),
		}
		b := &k.boxed
		b.ready, b.complete, b.sold, b.bought, b.held = k.ready, k.complete, k.sold, k.bought, k.held
		b.holder, b.claimed, b.live, b.blocked, b.bestGen = k.holder, k.claimed, k.live, k.blocked, k.bestGen
		return k
	})
}

// The number of keys and of arguments that hold.lua and hold_best.lua
// start with (appendShopperKeys, appendShopperArgs).
const (
	shopperKeyCount = 10
	shopperArgCount = 5
)

// appendShopperKeys appends to call (hotCall's) the keys 1 to 10 of
// hold.lua and hold_best.lua for an account, k being its event's keys and
// ak the account's.
func appendShopperKeys(call []any, k *holdKeys, ak accountKeys) []any {
	b := &k.boxed
	return append(call, b.ready, b.sold, b.bought, ak.hold, b.held, b.holder, b.claimed, ak.entry, b.live, b.blocked)
}

// accountKeys are an account's keys of an event that a fan's hold and
// release scripts name: hold:{e}:<account>, entry:{e}:<account> and
// hold:order:{e}:<account>.
type accountKeys struct{ hold, entry, holdOrder string }

// account returns the account's keys of k's event, built in one
// allocation.
func (k *holdKeys) account(acct int64) accountKeys {
	var num [20]byte
	n := strconv.AppendInt(num[:0], acct, 10)
	var b strings.Builder
	b.Grow(len(k.holdPrefix) + len(k.entryPrefix) + len(k.holdOrderPrefix) + 3*len(n))
	for _, prefix := range [...]string{k.holdPrefix, k.entryPrefix, k.holdOrderPrefix} {
		b.WriteString(prefix)
		b.Write(n)
	}
	all, a := b.String(), len(k.holdPrefix)+len(n)
	e := a + len(k.entryPrefix) + len(n)
	return accountKeys{hold: all[:a], entry: all[a:e], holdOrder: all[e:]}
}

// appendShopperArgs appends to call the arguments 1 to 5 of hold.lua and
// hold_best.lua for req, their values held in v (call's).
func appendShopperArgs(call []any, v *hotValues, req boxoffice.HoldRequest) []any {
	return append(call, v.int(req.AccountID), req.Limit, v.int(req.TTL.Milliseconds()), "0", v.str(req.SessionKey))
}

// runHoldScript runs script, hold.lua or hold_best.lua, with call (hotCall's:
// keys keys from appendShopperKeys on, then the arguments from
// appendShopperArgs on) and returns its reply, or the ENOENTRYTOKEN error it
// gave. When the sold-seat cache's marker is missing it loads the cache and
// runs the script once more; when that load fails because PostgreSQL cannot
// be reached, it runs the script on a complete copy instead (the first key
// becomes cache:complete:{e}, the fourth argument '1'), and answers the
// load's error if there is none (see Holds).
func (h *Holds) runHoldScript(ctx context.Context, script *hotScript, e int64, keys int, call []any) ([]any, error) {
	var loadErr error // the load failed: PostgreSQL cannot be reached
	for attempt := 0; ; attempt++ {
		res, err := runHot(ctx, h.shopperScripter(), script, false, keys, call).Slice()
		if err != nil {
			return nil, fmt.Errorf("hold seats of event %d: %w", e, err)
		}
		switch res[0] {
		case "no_entry":
			return nil, entryRefused(res[1])
		case "rebuild":
			switch {
			case loadErr != nil: // Redis lost the copy: wait for PostgreSQL
				return nil, loadErr
			case attempt > 0:
				return nil, fmt.Errorf("hold seats of event %d: sold-seat cache missing after loading it", e)
			}
			if err := h.loadSoldCache(ctx, e); err != nil {
				if !Unreachable(err) {
					return nil, err
				}
				loadErr = err
				call[hotCallStart], call[hotCallStart+keys+3] = h.keysOf(e).boxed.complete, "1"
			}
			continue
		}
		return res, nil
	}
}

// shopperScripter returns where a fan's hold scripts go: Pipe, or
// Redis.Client.
func (h *Holds) shopperScripter() HotScripter {
	if h.Pipe != nil {
		return h.Pipe
	}
	return h.Redis.Client
}

// entryRefused is the ENOENTRYTOKEN error for a reason a script gave.
func entryRefused(reason any) error {
	switch reason {
	case boxoffice.ReasonExpired, boxoffice.ReasonDone, boxoffice.ReasonLeft, boxoffice.ReasonOtherSession:
		return noEntry(reason.(string))
	}
	return noEntryYet()
}

// mineState builds an account's own part of the seat map from a script's
// reply: Redis's time (ms), the tickets bought, and the account's live
// holds as a flat list of label, expiry (ms), order (empty when the hold is in
// no order awaiting payment; hold_shopper.lua's holds_reply).
func mineState(nowMs, owned, holds any) (boxoffice.SeatMapState, error) {
	now := toInt64(nowMs)
	st := boxoffice.SeatMapState{Statuses: map[string]boxoffice.SeatStatus{}, Owned: int(toInt64(owned)), Now: time.UnixMilli(now)}
	flat, _ := holds.([]any)
	first := int64(-1)
	for i := 0; i+2 < len(flat); i += 3 {
		label, _ := flat[i].(string)
		exp, err := replyFloat(flat[i+1])
		if err != nil {
			return st, fmt.Errorf("hold expiry %v: %w", flat[i+1], err)
		}
		st.Statuses[label] = boxoffice.SeatMine
		st.Mine = append(st.Mine, label)
		if order, _ := flat[i+2].(string); order != "" {
			st.SetInOrder(label, order)
		}
		if e := int64(exp); first < 0 || e < first {
			first = e
		}
	}
	slices.Sort(st.Mine)
	if first >= 0 {
		st.HoldsTTL = time.Duration(first-now) * time.Millisecond
	}
	return st, nil
}

// replyFloat reads a number of a script's reply: a score (a string, as
// ZRANGE WITHSCORES gives it) or an integer.
func replyFloat(v any) (float64, error) {
	switch x := v.(type) {
	case string:
		return strconv.ParseFloat(x, 64)
	case int64:
		return float64(x), nil
	}
	return strconv.ParseFloat(fmt.Sprint(v), 64)
}

// Release ends the shopper's own hold on the seat with a compare-and-delete
// in one Lua script, which checks the entry first (see boxoffice.Shopper)
// and returns the account's own part of the seat map after it. A seat in the
// account's order awaiting payment stays held: the script finds the seat's
// seat:order key expiring with the hold (ExtendHolds), which lasts until the
// order is paid, expires (releaseOrder), fails or is refunded (endOrder), or
// a newer checkout names its own order on the seat. Errors: ENOENTRYTOKEN;
// EBADSEAT for a malformed or unknown label; ENOTFOUND when the account does
// not hold the seat (never held, expired, sold, or held by another account:
// the answer does not tell which); ESEATINORDER with Details["order_id"]
// when the seat is in the account's order awaiting payment; with either,
// nothing about the seat changes.
func (h *Holds) Release(ctx context.Context, s boxoffice.Shopper, label string) (boxoffice.SeatMapState, error) {
	if err := h.checkLabels(ctx, s.EventID, []string{label}, 1); err != nil {
		return boxoffice.SeatMapState{}, err
	}
	e := s.EventID
	k := h.keysOf(e)
	b := &k.boxed
	const ownKeys = 9
	// room for the keys and arguments of a run's longest reindex
	call, v := hotCall(ownKeys + 1 + boxoffice.MaxPerAccountLimit + 1 + 3 + 1 + 3*boxoffice.MaxPerAccountLimit)
	ak := k.account(s.AccountID)
	call = append(call, k.lockPrefix+label, ak.hold, b.held, b.holder, ak.entry, b.live, b.sold, b.bought, k.orderPrefix+label)
	call, indexArgs := h.appendReindex(ctx, e, []string{label}, call, ownKeys+1)
	call = append(call, ak.holdOrder)
	keys := len(call) - hotCallStart
	call = append(append(call, v.int(s.AccountID), v.str(label), v.str(s.SessionKey)), indexArgs...)
	res, err := runHot(ctx, h.shopperScripter(), holdReleaseScript, false, keys, call).Slice()
	if err != nil {
		return boxoffice.SeatMapState{}, fmt.Errorf("release seat %s of event %d: %w", label, e, err)
	}
	if res[0] == "no_entry" {
		return boxoffice.SeatMapState{}, entryRefused(res[1])
	}
	mine, err := mineState(res[1], res[2], res[3])
	if err != nil {
		return boxoffice.SeatMapState{}, fmt.Errorf("release seat %s of event %d: %w", label, e, err)
	}
	switch res[0] {
	case "released":
		return mine, nil
	case "in_order":
		order, _ := res[4].(string)
		return mine, &boxoffice.Error{
			Code:    boxoffice.ESEATINORDER,
			Msg:     boxoffice.M("hold_in_order", "Order", order),
			Details: map[string]any{"order_id": order},
		}
	}
	return mine, boxoffice.NewError(boxoffice.ENOTFOUND, "hold_not_yours")
}

// leaveTries bounds Leave's reads of the account's holds: each try fails
// only if the account held another seat between the read and the script.
const leaveTries = 5

// Leave ends the shopper's turn: every hold of the account for the event
// ends and so does its entry token, in one Lua script (hold_leave.lua), so
// that no hold outlives the turn and the place among the shoppers frees for
// the next admission. The seats held are read first (one round trip) so
// that the script can declare their keys; a hold taken in between makes the
// script change nothing, and Leave reads again. While the account has an
// order awaiting payment (one of its holds is in it, as Release checks),
// nothing changes: the turn goes on until the order is paid or ends.
// Errors: ENOENTRYTOKEN (see Shopper); EORDERPENDING with
// Details["order_id"] for an order awaiting payment; with either, nothing
// changed.
func (h *Holds) Leave(ctx context.Context, s boxoffice.Shopper) error {
	e, acct := s.EventID, s.AccountID
	for range leaveTries {
		labels, err := h.Redis.Client.ZRange(ctx, h.holdKey(e, acct), 0, -1).Result()
		if err != nil {
			return fmt.Errorf("leave the sale of event %d: %w", e, err)
		}
		keys := []string{h.holdKey(e, acct), h.Redis.Key("held:{%d}", e), h.Redis.Key("holder:{%d}", e),
			h.Redis.entryKey(e, acct), h.Redis.entryLiveKey(e)}
		keys = append(keys, h.seatKeys(e, labels)...)
		args := []any{acct, s.SessionKey, len(labels)}
		for _, l := range labels {
			args = append(args, l)
		}
		indexKeys, indexArgs := h.reindexArgs(ctx, e, labels, len(keys)+1)
		res, err := holdLeaveScript.Run(ctx, h.Redis.Client, append(keys, indexKeys...), append(args, indexArgs...)...).Slice()
		if err != nil {
			return fmt.Errorf("leave the sale of event %d: %w", e, err)
		}
		switch res[0] {
		case "no_entry":
			return entryRefused(res[1])
		case "order_pending":
			order, _ := res[1].(string)
			return &boxoffice.Error{
				Code:    boxoffice.EORDERPENDING,
				Msg:     boxoffice.M("leave_order_pending", "Order", order),
				Details: map[string]any{"order_id": order},
			}
		case "left":
			return nil
		}
	}
	return fmt.Errorf("leave the sale of event %d: the account's holds kept changing", e)
}

// SeatStatuses returns the state of all the event's seats for the shopper
// with one Redis round trip (a MULTI/EXEC pipeline; two more, and one
// PostgreSQL load, when the sold-seat cache must be loaded first), whatever
// the number of seats. The account's part is read on every call: Redis's
// TIME, its bought count and its holds with their expiries, so Mine, HoldsTTL
// and Owned are exact and remaining times are expiries minus Redis's TIME.
// The event's part (the held index with holders, and the sold set, O(seats)
// to read) is shared by all callers in the process and read again once it is
// MapMaxAge old, by one caller in the same pipeline while the others use the
// previous read: another account's hold or release, or a sale, may show up
// to MapMaxAge (plus one round trip) late, but an expired hold never shows.
// A sold seat shows as sold even while a hold on it lingers, and such a hold
// is not in Mine. A shared read is used only with the copy of the sold seats
// it was read from: when Redis lost its data since (cache:complete:{e} was
// set again, with another value, by the load that rebuilt the copy), the
// caller reads the event's part again, so that a sale a shared read from
// before the loss missed never shows free after it. Without the sold-seat
// cache, while PostgreSQL cannot be
// reached: the copy left in Redis is used if it was complete (see Holds),
// else the load's error is returned. The same pipeline reads the entry
// token, and nothing is returned unless it is live and bound to the
// shopper's session key (see boxoffice.Shopper). Errors: ENOENTRYTOKEN.
func (h *Holds) SeatStatuses(ctx context.Context, s boxoffice.Shopper) (boxoffice.SeatMapState, error) {
	eventID, accountID := s.EventID, s.AccountID
	me := strconv.FormatInt(accountID, 10)
	copyID := "" // the copy a shared read must come from; "": any
	for attempt := 0; ; attempt++ {
		shared, fetch := h.claimSharedMap(eventID, copyID)
		pipe := h.Redis.Client.TxPipeline()
		var entry *redis.StringCmd
		var ended *redis.FloatCmd
		if s.SessionKey != "" {
			entry = pipe.Get(ctx, h.Redis.entryKey(eventID, accountID))
			ended = pipe.ZScore(ctx, h.Redis.entryLiveKey(eventID), me)
		}
		timeCmd := pipe.Time(ctx)
		ready := pipe.Exists(ctx, h.Redis.Key("cache:ready:{%d}", eventID))
		complete := pipe.Get(ctx, h.Redis.Key("cache:complete:{%d}", eventID))
		bought := pipe.HGet(ctx, h.Redis.Key("bought:{%d}", eventID), me)
		mine := pipe.ZRangeWithScores(ctx, h.holdKey(eventID, accountID), 0, -1)
		inOrder := pipe.HGetAll(ctx, h.holdOrderKey(eventID, accountID))
		var held *redis.ZSliceCmd
		var holders *redis.MapStringStringCmd
		var sold, blocked *redis.StringSliceCmd
		if fetch {
			held = pipe.ZRangeWithScores(ctx, h.Redis.Key("held:{%d}", eventID), 0, -1)
			holders = pipe.HGetAll(ctx, h.Redis.Key("holder:{%d}", eventID))
			sold = pipe.SMembers(ctx, h.Redis.Key("sold:{%d}", eventID))
			blocked = pipe.SMembers(ctx, h.blockedKey(eventID))
		}
		cmds, _ := pipe.Exec(ctx)
		var err error
		for _, c := range cmds {
			if c.Err() != nil && c.Err() != redis.Nil {
				err = fmt.Errorf("seat statuses of event %d: %w", eventID, c.Err())
				break
			}
		}
		if err == nil && entry != nil {
			err = checkEntry(entry.Val(), ended, s.SessionKey)
		}
		if err == nil && ready.Val() == 0 {
			if attempt > 0 {
				err = fmt.Errorf("seat statuses of event %d: sold-seat cache missing after loading it", eventID)
			} else if err = h.loadSoldCache(ctx, eventID); err == nil {
				h.storeSharedMap(eventID, nil, fetch)
				continue
			} else if Unreachable(err) && complete.Val() != "" {
				err = nil // use the copy this transaction read
			}
		}
		if err != nil {
			h.storeSharedMap(eventID, nil, fetch)
			return boxoffice.SeatMapState{}, err
		}
		if !fetch && shared.copyID != complete.Val() && attempt < 2 {
			copyID = complete.Val() // the shared read is from before a loss
			continue
		}
		if fetch {
			shared = &sharedMap{read: h.Redis.Now(), copyID: complete.Val(), held: make(map[string]heldSeat, len(held.Val())), sold: sold.Val(), blocked: blocked.Val()}
			hs := holders.Val()
			for _, z := range held.Val() {
				l := z.Member.(string)
				shared.held[l] = heldSeat{expiry: int64(z.Score), holder: hs[l]}
			}
			h.storeSharedMap(eventID, shared, true)
		}
		owned := 0
		if v := bought.Val(); v != "" {
			if owned, err = strconv.Atoi(v); err != nil {
				return boxoffice.SeatMapState{}, fmt.Errorf("seat statuses of event %d: bought count %q: %w", eventID, v, err)
			}
		}
		return shared.state(timeCmd.Val(), me, mine.Val(), inOrder.Val(), owned), nil
	}
}

// checkEntry is the entry check of the hold scripts, on an entry token
// ("<token>|<session key>", "" if none) and the account's score in
// entry:live:{e} (missing if it was never admitted), read in a MULTI/EXEC.
func checkEntry(token string, ended *redis.FloatCmd, sessionKey string) error {
	_, bound, ok := strings.Cut(token, "|")
	switch {
	case token == "" && ended.Err() == nil:
		return noEntry(endedReason(ended.Val()))
	case token == "":
		return noEntryYet()
	case !ok || !equal(bound, sessionKey):
		return otherSession()
	}
	return nil
}

// DefaultMapMaxAge is how old NewHolds lets the shared read of an event's
// held and sold seats be before SeatStatuses reads it again.
const DefaultMapMaxAge = time.Second

// sharedMap is one read of an event's held index, holders and sold set, used
// by every SeatStatuses call of the process until it is MapMaxAge old.
type sharedMap struct {
	read time.Time // on the store's clock (Redis.Now): only its age matters
	// copyID is cache:complete:{e}'s value when it was read: it changes only
	// when Redis lost its data and the copy of the sold seats was rebuilt.
	copyID string
	held   map[string]heldSeat
	sold   []string
	// blocked are the seats an admin blocked (blocked:{e}): the map shows
	// them sold, unavailable to fans like a sold seat.
	blocked []string
}

type heldSeat struct {
	expiry int64 // ms on Redis's clock
	holder string
}

// sharedMapSlot is an event's latest sharedMap and whether a caller is
// reading the next one.
type sharedMapSlot struct {
	m       *sharedMap
	reading bool
}

// claimSharedMap returns the event's shared read and whether the caller must
// read it again (then it must call storeSharedMap). Only one caller at a time
// reads again while an older read exists; callers without any read, or
// without one of the copy copyID (unless it is ""), all read.
func (h *Holds) claimSharedMap(eventID int64, copyID string) (*sharedMap, bool) {
	if h.MapMaxAge <= 0 {
		return nil, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	slot := h.maps[eventID]
	if slot == nil {
		slot = &sharedMapSlot{}
		h.maps[eventID] = slot
	}
	if slot.m != nil && (copyID == "" || slot.m.copyID == copyID) && (slot.reading || h.Redis.Now().Sub(slot.m.read) < h.MapMaxAge) {
		return slot.m, false
	}
	slot.reading = true
	return slot.m, true
}

// storeSharedMap ends a read claimed by claimSharedMap, keeping m unless it
// is nil (the read failed) or older than the kept one.
func (h *Holds) storeSharedMap(eventID int64, m *sharedMap, claimed bool) {
	if h.MapMaxAge <= 0 || !claimed {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	slot := h.maps[eventID]
	slot.reading = false
	if m != nil && (slot.m == nil || m.read.After(slot.m.read)) {
		slot.m = m
	}
}

// state combines the shared read with the account's own holds at now (Redis's
// clock). A seat the shared read shows held by the account itself is decided
// by its own holds alone, so that a seat it just released shows free.
// inOrder is hold:order:{e}:<account> as read with the holds (label ->
// order awaiting payment).
func (m *sharedMap) state(now time.Time, me string, mine []redis.Z, inOrder map[string]string, owned int) boxoffice.SeatMapState {
	nowMs := now.UnixMilli()
	st := boxoffice.SeatMapState{
		Statuses: make(map[string]boxoffice.SeatStatus, len(m.held)+len(m.sold)+len(m.blocked)+len(mine)),
		Owned:    owned,
		Now:      now,
	}
	for l, hs := range m.held {
		if hs.expiry >= nowMs && hs.holder != me {
			st.Statuses[l] = boxoffice.SeatHeld
		}
	}
	for _, l := range m.sold {
		st.Statuses[l] = boxoffice.SeatSold
	}
	for _, l := range m.blocked {
		st.Statuses[l] = boxoffice.SeatSold
	}
	first := int64(-1)
	for _, z := range mine {
		l, exp := z.Member.(string), int64(z.Score)
		if exp < nowMs || st.Statuses[l] == boxoffice.SeatSold {
			continue
		}
		st.Statuses[l] = boxoffice.SeatMine
		st.Mine = append(st.Mine, l)
		if order := inOrder[l]; order != "" {
			st.SetInOrder(l, order)
		}
		if first < 0 || exp < first {
			first = exp
		}
	}
	slices.Sort(st.Mine)
	if first >= 0 {
		st.HoldsTTL = time.Duration(first-nowMs) * time.Millisecond
	}
	return st
}

// MyHolds returns the account's live holds for the event, sorted, and the
// time left (Redis's clock) until the first of them ends; with none, an empty
// list and 0. Holds of seats sold since are left out and forgotten. One Lua
// script, one round trip.
func (h *Holds) MyHolds(ctx context.Context, eventID, accountID int64) ([]string, time.Duration, error) {
	res, err := holdMineScript.Run(ctx, h.Redis.Client, []string{
		h.holdKey(eventID, accountID),
		h.Redis.Key("sold:{%d}", eventID),
	}).Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("holds of account %d for event %d: %w", accountID, eventID, err)
	}
	now, first := res[0].(int64), int64(-1)
	labels := []string{}
	for i := 1; i+1 < len(res); i += 2 {
		labels = append(labels, res[i].(string))
		if exp := res[i+1].(int64); first < 0 || exp < first {
			first = exp
		}
	}
	slices.Sort(labels)
	if first < 0 {
		return labels, 0, nil
	}
	return labels, time.Duration(first-now) * time.Millisecond, nil
}

// holdTaken is the ESEATTAKEN error of a hand-picked hold refused for
// taken seats (held by another account, sold or blocked), blocked of them
// blocked by an admin: those are not for sale, which the sentence says
// rather than that another fan took them, and Details["blocked"] names.
func holdTaken(taken, blocked []string) *boxoffice.Error {
	err := &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Msg: boxoffice.M("hold_taken"), Details: map[string]any{"seats": taken}}
	switch {
	case len(blocked) == 0:
		return err
	case len(blocked) == len(taken):
		err.Msg = boxoffice.M("hold_not_for_sale", "Seats", strings.Join(blocked, ", "))
	default:
		err.Msg = boxoffice.M("hold_taken_not_for_sale", "Seats", strings.Join(blocked, ", "))
	}
	err.Details["blocked"] = blocked
	return err
}

// ExtendHolds sets the expiry of each of labels that the account still holds
// to ttl (whole milliseconds) from now on Redis's clock, unless it was later
// already, and records orderID on each of them (seat:order:{e}:<label>,
// expiring with the hold), in one Lua script; checkout calls it to keep the
// seats through the order's payment window. The order's expiry then ends only
// those holds (releaseOrder). In the same script, when every seat was still
// held, the account's entry token (entry:{e}:<account>, and its expiry in
// entry:live:{e}) lasts at least as long, so that the turn does not end
// before the order's payment window: a token that ended stays ended, and
// one that lasts longer keeps its expiry. Errors: ESEATTAKEN with
// Details["seats"] the labels the account no longer holds (expired,
// released, sold or never held); the others were extended all the same, and
// the token was not. A ttl under 1 ms is a programming error.
func (h *Holds) ExtendHolds(ctx context.Context, eventID, accountID int64, orderID string, labels []string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("extend holds: TTL %v must be positive", ttl)
	}
	if len(labels) == 0 {
		return nil
	}
	keys := []string{h.holdKey(eventID, accountID), h.Redis.Key("held:{%d}", eventID),
		h.Redis.entryKey(eventID, accountID), h.Redis.entryLiveKey(eventID), h.holdOrderKey(eventID, accountID)}
	keys = append(keys, h.seatKeys(eventID, labels)...)
	args := []any{accountID, ttl.Milliseconds(), orderID}
	for _, l := range labels {
		args = append(args, l)
	}
	res, err := holdExtendScript.Run(ctx, h.Redis.Client, keys, args...).StringSlice()
	if err != nil {
		return fmt.Errorf("extend holds of account %d for event %d: %w", accountID, eventID, err)
	}
	if len(res) > 0 {
		return &boxoffice.Error{
			Code:    boxoffice.ESEATTAKEN,
			Msg:     boxoffice.M("hold_ended_some"),
			Details: map[string]any{"seats": res},
		}
	}
	return nil
}

// seatKeys returns the seats' seat:lock:{e}:<label> keys, then their
// seat:order:{e}:<label> keys, each in labels' order.
func (h *Holds) seatKeys(eventID int64, labels []string) []string {
	keys := make([]string, 2*len(labels))
	for i, l := range labels {
		keys[i], keys[len(labels)+i] = h.lockKey(eventID, l), h.seatOrderKey(eventID, l)
	}
	return keys
}

// seatOrderKey names the order whose checkout extended the seat's hold,
// seat:order:{e}:<label>.
func (h *Holds) seatOrderKey(eventID int64, label string) string {
	return h.Redis.Key("seat:order:{%d}:%s", eventID, label)
}

// endOrder ends, in one Lua script, the order's claim on the holds of its
// seats (labels), for an order of the account that can no longer be paid
// (failed or refunded): each seat:order:{e}:<label> key that names orderID
// goes, with its entry in hold:order:{e}:<account>, so that the buyer may
// release the holds again (Release, Leave) and the hold panel offers it; a
// key that names a newer order stays. Errors: Redis's (then the keys expire
// with the holds they describe).
func (h *Holds) endOrder(ctx context.Context, eventID, accountID int64, orderID string, labels []string) error {
	if len(labels) == 0 {
		return nil
	}
	keys := make([]string, 1+len(labels))
	keys[0] = h.holdOrderKey(eventID, accountID)
	args := make([]any, 1+len(labels))
	args[0] = orderID
	for i, l := range labels {
		keys[1+i], args[1+i] = h.seatOrderKey(eventID, l), l
	}
	if err := holdOrderEndScript.Run(ctx, h.Redis.Client, keys, args...).Err(); err != nil {
		return fmt.Errorf("end the holds' order %s: %w", orderID, err)
	}
	return nil
}

// MarkSold records in Redis, in one Lua script, a sale that PostgreSQL
// committed: labels join sold:{e}, the account's bought count becomes
// boughtTotal (its tickets for the event in all, as purchase_count says after
// the commit) unless it is higher already, and every hold on those seats ends
// (whoever held it) and leaves the indexes. If the account then holds no
// other live seat of the event, its entry token ends in the same script,
// freeing its place among the shoppers (max_shoppers) for the next
// admission; a buyer still holding seats keeps the turn. Calling it again
// changes nothing.
func (h *Holds) MarkSold(ctx context.Context, eventID, accountID int64, labels []string, boughtTotal int) error {
	keys := []string{
		h.Redis.Key("sold:{%d}", eventID),
		h.Redis.Key("bought:{%d}", eventID),
		h.holdKey(eventID, accountID),
		h.Redis.Key("held:{%d}", eventID),
		h.Redis.Key("holder:{%d}", eventID),
		h.Redis.Key("claimed:{%d}", eventID),
		h.Redis.entryKey(eventID, accountID),
		h.Redis.entryLiveKey(eventID),
	}
	args := []any{accountID, boughtTotal}
	for _, l := range labels {
		keys = append(keys, h.lockKey(eventID, l))
		args = append(args, l)
	}
	if err := holdSoldScript.Run(ctx, h.Redis.Client, keys, args...).Err(); err != nil {
		return fmt.Errorf("mark seats of event %d sold: %w", eventID, err)
	}
	return nil
}

// orderMarkerTTL is how long an order's marker (order:holds:{e}:<order>)
// lives: far longer than an ExpireOrders call that read the order as due
// may last (expireTimeout), so that such a call, however late, finds it.
const orderMarkerTTL = 10 * expireTimeout

// releaseOrder ends the account's holds on labels, the seats of an order
// that its expiry found due (orderID), in one Lua script, unless the order's
// marker is there: the first call for the order releases and sets it, and a
// later call, or one after the order's confirmation claimed its seats
// (claimSeats), changes nothing. Only the holds this order extended end (see
// ExtendHolds): a newer hold of the account on one of the seats, taken after
// the order's own ended or extended by a newer order, stays, as do seats held
// by another account. Errors: Redis's (then nothing was released).
func (h *Holds) releaseOrder(ctx context.Context, eventID, accountID int64, orderID string, labels []string) error {
	keys := []string{
		h.orderKey(eventID, orderID),
		h.holdKey(eventID, accountID),
		h.Redis.Key("held:{%d}", eventID),
		h.Redis.Key("holder:{%d}", eventID),
	}
	keys = append(keys, h.seatKeys(eventID, labels)...)
	args := []any{accountID, orderMarkerTTL.Milliseconds(), orderID, len(labels)}
	for _, l := range labels {
		args = append(args, l)
	}
	indexKeys, indexArgs := h.reindexArgs(ctx, eventID, labels, len(keys)+1)
	if err := holdReleaseOrder.Run(ctx, h.Redis.Client, append(keys, indexKeys...), append(args, indexArgs...)...).Err(); err != nil {
		return fmt.Errorf("release the holds of order %s: %w", orderID, err)
	}
	return nil
}

// unsell records in Redis, in one Lua script, a refund that PostgreSQL
// committed: labels leave sold:{e}, the account's bought count falls by
// their number, and refunds:{e} rises, so that a load of the copy that read
// PostgreSQL before the commit writes nothing; their runs are back in best
// available's index (bestIndexKey). Call it once per refund.
func (h *Holds) unsell(ctx context.Context, eventID, accountID int64, labels []string) error {
	args := []any{accountID, len(labels)}
	for _, l := range labels {
		args = append(args, l)
	}
	keys := []string{
		h.Redis.Key("sold:{%d}", eventID),
		h.Redis.Key("bought:{%d}", eventID),
		h.refundsKey(eventID),
	}
	indexKeys, indexArgs := h.reindexArgs(ctx, eventID, labels, len(keys)+1)
	err := holdUnsoldScript.Run(ctx, h.Redis.Client, append(keys, indexKeys...), append(args, indexArgs...)...).Err()
	if err != nil {
		return fmt.Errorf("unsell seats of event %d: %w", eventID, err)
	}
	return nil
}

// blockedKey is the copy of the event's blocked seats, blocked:{e}.
func (h *Holds) blockedKey(eventID int64) string {
	return h.Redis.Key("blocked:{%d}", eventID)
}

// blockingKey records the blocks under way, blocking:{e}.
func (h *Holds) blockingKey(eventID int64) string {
	return h.Redis.Key("blocking:{%d}", eventID)
}

// unblocksKey counts the seats taken out of blocked:{e}, unblocks:{e}.
func (h *Holds) unblocksKey(eventID int64) string {
	return h.Redis.Key("unblocks:{%d}", eventID)
}

// blockLockKey is the lock of a change of the event's blocked seats,
// blocks:lock:{e}.
func (h *Holds) blockLockKey(eventID int64) string {
	return h.Redis.Key("blocks:lock:{%d}", eventID)
}

// refundsKey counts the event's refunds applied in Redis, refunds:{e}.
func (h *Holds) refundsKey(eventID int64) string {
	return h.Redis.Key("refunds:{%d}", eventID)
}

// orderKey is the order's marker, order:holds:{e}:<order>.
func (h *Holds) orderKey(eventID int64, orderID string) string {
	return h.Redis.Key("order:holds:{%d}:%s", eventID, orderID)
}

func (h *Holds) lockKey(eventID int64, label string) string {
	return h.Redis.Key("seat:lock:{%d}:%s", eventID, label)
}

func (h *Holds) holdKey(eventID, accountID int64) string {
	return h.Redis.Key("hold:{%d}:%d", eventID, accountID)
}

// holdOrderKey is hold:order:{e}:<account>, the hash label -> order id of
// the account's holds in its order awaiting payment, expiring with the last
// of their seat:order keys (ExtendHolds): what the hold panel reads to tell
// those holds, which cannot be released, from the others.
func (h *Holds) holdOrderKey(eventID, accountID int64) string {
	return h.Redis.Key("hold:order:{%d}:%d", eventID, accountID)
}

// refuse counts a refused hold request by its error code.
func (h *Holds) refuse(err error) {
	h.refused.WithLabelValues(boxoffice.ErrorCode(err)).Inc()
}

// checkLabels returns an EBADSEAT error unless labels name 1 to limit
// distinct, well-formed seats of the event. The error names malformed labels
// cut to MaxSeatLabelLen characters, so that it never echoes a long string.
func (h *Holds) checkLabels(ctx context.Context, eventID int64, labels []string, limit int) error {
	bad := func(msg boxoffice.Msg, seats []string) error {
		err := &boxoffice.Error{Code: boxoffice.EBADSEAT, Msg: msg}
		if len(seats) > 0 {
			err.Details = map[string]any{"seats": seats}
		}
		return err
	}
	switch {
	case len(labels) == 0:
		return bad(boxoffice.M("hold_choose_one"), nil)
	case len(labels) > limit:
		return bad(boxoffice.M("hold_choose_max", "Max", limit), nil)
	}
	var malformed, dup []string
	seen := make(map[string]bool, len(labels))
	for _, l := range labels {
		if !boxoffice.ValidSeatLabel(l) {
			malformed = append(malformed, boxoffice.ClipInput(l, boxoffice.MaxSeatLabelLen))
		} else if seen[l] {
			dup = append(dup, l)
		}
		seen[l] = true
	}
	if len(malformed) > 0 {
		return bad(boxoffice.M("hold_bad_seat"), malformed)
	}
	if len(dup) > 0 {
		return bad(boxoffice.M("hold_duplicate"), dup)
	}
	known, err := h.eventLabels(ctx, eventID)
	if err != nil {
		return err
	}
	var unknown []string
	for _, l := range labels {
		if _, ok := known[l]; !ok {
			unknown = append(unknown, l)
		}
	}
	if len(unknown) > 0 {
		return bad(boxoffice.M("hold_unknown_seat"), unknown)
	}
	return nil
}

// eventLabels returns the set of the event's seat labels, read from
// PostgreSQL on first use and kept for the life of the process once the
// event's seats are fixed (seatsFixed): before, its venue may still change,
// so they are read on every call. An event without seats (or no event) is
// not kept, so an event created later is found.
func (h *Holds) eventLabels(ctx context.Context, eventID int64) (map[string]struct{}, error) {
	h.mu.Lock()
	set, ok := h.labels[eventID]
	h.mu.Unlock()
	if ok {
		return set, nil
	}
	v, err, _ := h.loads.Do("labels:"+strconv.FormatInt(eventID, 10), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		defer cancel()
		rows, err := h.DB.Pool.Query(ctx, `SELECT label FROM event_seat WHERE event_id = $1`, eventID)
		if err != nil {
			return nil, fmt.Errorf("seat labels of event %d: %w", eventID, err)
		}
		set := map[string]struct{}{}
		var l string
		for rows.Next() {
			if err := rows.Scan(&l); err != nil {
				return nil, fmt.Errorf("seat labels of event %d: %w", eventID, err)
			}
			set[l] = struct{}{}
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("seat labels of event %d: %w", eventID, err)
		}
		fixed, err := h.seatsFixed(ctx, eventID)
		if err != nil {
			return nil, err
		}
		if len(set) > 0 && fixed {
			h.mu.Lock()
			h.labels[eventID] = set
			h.mu.Unlock()
		}
		return set, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string]struct{}), nil
}

// seatsFixed reports whether the event's seats can no longer change
// (store.SeatsFixedQuery): its queue opened or it has an order.
func (h *Holds) seatsFixed(ctx context.Context, eventID int64) (bool, error) {
	var fixed bool
	if err := h.DB.Pool.QueryRow(ctx, SeatsFixedQuery, eventID, h.DB.Now()).Scan(&fixed); err != nil {
		return false, fmt.Errorf("seats of event %d fixed: %w", eventID, err)
	}
	return fixed, nil
}

// loadSoldCache copies the event's sold seats and bought counts from
// PostgreSQL into Redis and sets cache:ready:{e} and cache:complete:{e},
// through hold_cache.lua: it merges (never removes) and skips when
// cache:ready:{e} is there, so that loads racing each other or a MarkSold
// are harmless. A load during which Redis lost its data writes nothing and
// is tried again, up to soldLoadTries times (then an error). Callers in one
// process share one load per event; it outlives a caller that gives up (up
// to loadTimeout), since the others wait for it.
func (h *Holds) loadSoldCache(ctx context.Context, eventID int64) error {
	_, err, _ := h.loads.Do("sold:"+strconv.FormatInt(eventID, 10), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		defer cancel()
		for range soldLoadTries {
			if done, err := h.loadSoldCacheOnce(ctx, eventID); done || err != nil {
				return nil, err
			}
		}
		return nil, fmt.Errorf("load sold seats of event %d into Redis: Redis lost its data during each of %d tries", eventID, soldLoadTries)
	})
	return err
}

// soldLoadTries bounds the loads of loadSoldCache that Redis losing its data
// voids.
const soldLoadTries = 3

// loadSoldCacheOnce is one try of loadSoldCache. It first sets
// cache:loading:{e}:<random id> (expiring after loadTimeout), then reads
// PostgreSQL; hold_cache.lua writes only if that key is still there, so a
// cache that may miss a sale never gets its marker. It reports false, with
// nothing written, when the key was gone. A read that fails deletes the key,
// so that the tries of an outage, one per hold, do not pile up in Redis.
func (h *Holds) loadSoldCacheOnce(ctx context.Context, eventID int64) (bool, error) {
	id, err := randomToken()
	if err != nil {
		return false, err
	}
	loading := h.Redis.Key("cache:loading:{%d}:%s", eventID, id)
	if err := h.Redis.Client.Set(ctx, loading, "1", loadTimeout).Err(); err != nil {
		return false, fmt.Errorf("load sold seats of event %d into Redis: %w", eventID, err)
	}
	counts, err := h.Redis.Client.MGet(ctx, h.refundsKey(eventID), h.unblocksKey(eventID)).Result()
	if err != nil {
		return false, fmt.Errorf("load sold seats of event %d into Redis: %w", eventID, err)
	}
	refunds, _ := counts[0].(string)
	unblocks, _ := counts[1].(string)
	snap, err := h.soldFromDB(ctx, eventID)
	if err != nil {
		h.Redis.Client.Del(ctx, loading) // it expires anyway if Redis fails too
		return false, err
	}
	if h.afterSoldRead != nil {
		h.afterSoldRead()
	}
	args := make([]any, 0, 6+len(snap.sold)+len(snap.blocked)+len(snap.bought))
	args = append(args, h.soldCacheTTL().Milliseconds(), (loadTimeout + claimCommitMargin).Milliseconds(),
		len(snap.sold), refunds, unblocks, len(snap.blocked))
	for _, l := range snap.sold {
		args = append(args, l)
	}
	for _, l := range snap.blocked {
		args = append(args, l)
	}
	args = append(args, snap.bought...)
	n, err := holdCacheScript.Run(ctx, h.Redis.Client, []string{
		h.Redis.Key("cache:ready:{%d}", eventID),
		h.Redis.Key("sold:{%d}", eventID),
		h.Redis.Key("bought:{%d}", eventID),
		loading,
		h.Redis.Key("cache:complete:{%d}", eventID),
		h.Redis.Key("claimed:{%d}", eventID),
		h.refundsKey(eventID),
		h.blockedKey(eventID),
		h.blockingKey(eventID),
		h.unblocksKey(eventID),
		h.bestGenKey(eventID),
	}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("load sold seats of event %d into Redis: %w", eventID, err)
	}
	return n >= 0, nil
}

// soldSnapshot is what a load of the sold-seat copy reads from PostgreSQL in
// one snapshot: the event's sold seat labels, its blocked seat labels, and
// the accounts' bought tickets as account id, tickets pairs.
type soldSnapshot struct {
	sold, blocked []string
	bought        []any
}

// soldFromDB reads the event's soldSnapshot.
func (h *Holds) soldFromDB(ctx context.Context, eventID int64) (soldSnapshot, error) {
	var snap soldSnapshot
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := pgx.BeginTxFunc(ctx, h.DB.Pool, opts, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT seat_label FROM sold_seat WHERE event_id = $1`, eventID)
		if err != nil {
			return err
		}
		if snap.sold, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT seat_label FROM blocked_seat WHERE event_id = $1`, eventID)
		if err != nil {
			return err
		}
		if snap.blocked, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT account_id, tickets FROM purchase_count WHERE event_id = $1 AND tickets > 0`, eventID)
		if err != nil {
			return err
		}
		var acct int64
		var n int
		_, err = pgx.ForEachRow(rows, []any{&acct, &n}, func() error {
			snap.bought = append(snap.bought, acct, n)
			return nil
		})
		return err
	})
	if err != nil {
		return soldSnapshot{}, fmt.Errorf("sold seats of event %d: %w", eventID, err)
	}
	return snap, nil
}

// stringsOf converts a Lua array reply of strings.
func stringsOf(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
