package store

import (
	"context"
	"maps"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// HotScripter is where the hot requests' scripts go (Queue.Pipe,
// Holds.Pipe): go-redis's scripting commands, and Process, which sends a
// script's call as runHot builds it.
type HotScripter interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
}

// hotScript is a script of the hot requests (runHot), with its hash boxed
// once as a call's argument.
type hotScript struct {
	*redis.Script
	hash any
}

// newHotScript returns s with its hash boxed.
func newHotScript(s *redis.Script) *hotScript {
	return &hotScript{Script: s, hash: s.Hash()}
}

// hotCallStart is where a hot script's keys begin in its call (hotCall),
// after EVALSHA, the script's hash and the number of keys.
const hotCallStart = 3

// hotCall returns the start of a call of a hot script, with room for n keys
// and arguments, and the room for its arguments' values (hotValues): the
// caller appends the keys, then the arguments, and sends it with runHot. A
// call built so is one slice, with the event's keys boxed once
// (queueKeys.boxed) and the script's hash boxed once (hotScript); from a
// []string of keys and the arguments, Script.Run builds the same command
// with a slice of its own, boxing the command's name, the hash and every key
// on every call (12 allocations of a join's 81). The call and the values are
// one allocation when the call takes at most hotCallRoom elements.
func hotCall(n int) ([]any, *hotValues) {
	v := &hotValues{}
	if hotCallStart+n <= len(v.room) {
		return v.room[:hotCallStart], v
	}
	return make([]any, hotCallStart, hotCallStart+n), v
}

// hotCallRoom is how many elements of a call hotValues holds: a join's 23,
// a hold of up to five seats.
const hotCallRoom = 32

// hotValues holds a hot script's call (hotCall) and the values of its
// string and integer arguments, so that each costs no allocation of its own
// to box: str and int box a pointer to a copy held here (a *string or an
// *int64, which go-redis writes as the value it points to, the same bytes),
// where boxing a string or an int64 copies it to the heap. Keys are never
// given so: go-redis reads a command's first key, and runHot its keys, as
// strings.
type hotValues struct {
	room   [hotCallRoom]any
	strs   [6]string
	ints   [4]int64
	ns, ni int
}

// str returns s as a call's argument.
func (v *hotValues) str(s string) any {
	if s == "" || v.ns == len(v.strs) {
		return s // Go boxes "" without allocating
	}
	v.strs[v.ns] = s
	v.ns++
	return &v.strs[v.ns-1]
}

// int returns n as a call's argument.
func (v *hotValues) int(n int64) any {
	if uint64(n) < 256 || v.ni == len(v.ints) {
		return n // Go boxes 0 to 255 without allocating
	}
	v.ints[v.ni] = n
	v.ni++
	return &v.ints[v.ni-1]
}

// runHot sends call (hotCall's, its first keys elements after the start
// being the keys, each a string) as EVALSHA of s on c (Queue.hot,
// Holds.shopperScripter), or EVALSHA_RO when readOnly, as Script.Run and
// RunRO send it. Should Redis not have the script (NOSCRIPT: Redis
// restarted, or its scripts were flushed), it is sent again with EVAL
// (EVAL_RO), which loads it, as Script.Run does.
func runHot(ctx context.Context, c HotScripter, s *hotScript, readOnly bool, keys int, call []any) *redis.Cmd {
	call[0], call[1], call[2] = "evalsha", s.hash, keys
	if readOnly {
		call[0] = "evalsha_ro"
	}
	cmd := redis.NewCmd(ctx, call...)
	cmd.SetFirstKeyPos(hotCallStart)
	_ = c.Process(ctx, cmd)
	if err := cmd.Err(); err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return cmd
	}
	names := make([]string, keys)
	for i := range names {
		names[i] = call[hotCallStart+i].(string)
	}
	if readOnly {
		return s.EvalRO(ctx, c, names, call[hotCallStart+keys:]...)
	}
	return s.Eval(ctx, c, names, call[hotCallStart+keys:]...)
}

// perEvent keeps a value per event (the keys the hot scripts name, built
// once per event and instance: Queue.keysOf, Holds.keysOf), in a map that
// is copied to add one, so that reading it takes no lock. Its zero value is
// empty and ready; it is safe for concurrent use.
type perEvent[T any] struct {
	m atomic.Pointer[map[int64]*T]
}

// get returns event e's value, built by build on the first call for e (two
// callers racing may both build; one value is kept and returned to both).
func (p *perEvent[T]) get(e int64, build func() *T) *T {
	if m := p.m.Load(); m != nil {
		if v, ok := (*m)[e]; ok {
			return v
		}
	}
	v := build()
	for {
		old := p.m.Load()
		next := make(map[int64]*T, 1)
		if old != nil {
			if have, ok := (*old)[e]; ok {
				return have
			}
			next = maps.Clone(*old)
		}
		next[e] = v
		if p.m.CompareAndSwap(old, &next) {
			return v
		}
	}
}

// keyOf returns prefix (a key's start, such as "hold:{7}:") followed by n
// in decimal, in one allocation, where Redis.Key formats its whole format.
func keyOf(prefix string, n int64) string {
	var b [20]byte
	return prefix + string(strconv.AppendInt(b[:0], n, 10))
}
