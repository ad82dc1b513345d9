package store

import (
	"context"

	"github.com/redis/go-redis/v9"
)

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
// being the keys) as EVALSHA of s on the hot client (Queue.hot), or
// EVALSHA_RO when readOnly, as Script.Run and RunRO send it. Should Redis
// not have the script (NOSCRIPT: Redis restarted, or its scripts were
// flushed), it is sent again with EVAL (EVAL_RO), which loads it, as
// Script.Run does.
func (q *Queue) runHot(ctx context.Context, s *hotScript, readOnly bool, keys int, call []any) *redis.Cmd {
	c := q.hot()
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
