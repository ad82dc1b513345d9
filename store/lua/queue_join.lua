-- Join an event's waiting room (store.Queue.Join), atomically:
-- an account that bought the limit (bought:{e}) is refused and nothing
-- changes; an account with a live entry token is reported admitted, and a join from
-- another session than the token's moves the turn to the joining session (a
-- fresh token bound to it, same expiry: KEEPTTL), so that the copy the
-- earlier session holds stops working; an account in line keeps its place
-- (ZSCORE) and its place is bound to the new session; otherwise, unless the
-- event sold out, it gets the next sequence (INCR) and a place (ZADD NX),
-- and the queue gets an epoch if it has none.
--
-- KEYS[1] queue:{e}        sorted set account -> sequence
-- KEYS[2] queue:seq:{e}    INCR counter
-- KEYS[3] queue:sess:{e}   hash account -> session key
-- KEYS[4] queue:stats:{e}  hash of shared figures
-- KEYS[5] entry:{e}:{acct} the account's entry token, "<token>|<session key>"
-- KEYS[6] bought:{e}       hash account -> tickets bought
-- ARGV[1] account id, ARGV[2] session key, ARGV[3] epoch for a new queue,
-- ARGV[4] a fresh entry token, used only to move a live turn,
-- ARGV[5] the per-account limit, 0 for no check
--
-- Returns {state, sequence, now (Unix ms, Redis clock), stats as HGETALL},
-- state one of "limit_reached", "admitted", "rejoined", "joined",
-- "sold_out".
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local limit = tonumber(ARGV[5])
if limit > 0 and tonumber(redis.call('HGET', KEYS[6], ARGV[1]) or '0') >= limit then
  return {'limit_reached', 0, now, {}}
end

local entry = redis.call('GET', KEYS[5])
if entry then
  local bar = string.find(entry, '|', 1, true)
  if not bar or string.sub(entry, bar + 1) ~= ARGV[2] then
    redis.call('SET', KEYS[5], ARGV[4] .. '|' .. ARGV[2], 'KEEPTTL')
  end
  return {'admitted', 0, now, redis.call('HGETALL', KEYS[4])}
end

local seq = redis.call('ZSCORE', KEYS[1], ARGV[1])
if seq then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
  return {'rejoined', seq, now, redis.call('HGETALL', KEYS[4])}
end

if redis.call('HGET', KEYS[4], 'sold_out') == '1' then
  return {'sold_out', 0, now, redis.call('HGETALL', KEYS[4])}
end

seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], 'NX', seq, ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('HSETNX', KEYS[4], 'epoch', ARGV[3])
return {'joined', seq, now, redis.call('HGETALL', KEYS[4])}
