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
// and arguments: the caller appends the keys, then the arguments, and sends
// it with runHot. A call built so is one slice, with the event's keys boxed
// once (queueKeys.boxed) and the script's hash boxed once (hotScript); from
// a []string of keys and the arguments, Script.Run builds the same command
// with a slice of its own, boxing the command's name, the hash and every key
// on every call (12 allocations of a join's 81).
func hotCall(n int) []any {
	return make([]any, hotCallStart, hotCallStart+n)
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
