-- Join an event's waiting room (store.Queue.Join), atomically:
-- an account that bought the limit (bought:{e}) is refused and nothing
-- changes; an account with a live entry token is reported admitted, and a join from
-- another session than the token's moves the turn to the joining session (a
-- fresh token bound to it, same expiry: KEEPTTL), so that the copy the
-- earlier session holds stops working; an account in line keeps its place
-- (ZSCORE) and its place is bound to the joining session; otherwise, unless the
-- event sold out, it gets the next sequence (INCR) and a place (ZADD NX),
-- and the queue gets an epoch if it has none.
--
-- KEYS[1] queue:{e}        sorted set account -> sequence
-- KEYS[2] queue:seq:{e}    INCR counter
-- KEYS[3] queue:sess:{e}   hash account -> session key
-- KEYS[4] queue:stats:{e}  hash of shared figures
-- KEYS[5] entry:{e}:{acct} the account's entry token, "<token>|<session key>"
-- KEYS[6] bought:{e}       hash account -> tickets bought
-- KEYS[7] prequeue:{e}     sorted set, all scores 0, of "<rank>:<ticket>:<account>"
-- KEYS[8] prequeue:acct:{e} hash account -> "<ticket>|<session key>"
-- ARGV[1] account id, ARGV[2] session key, ARGV[3] epoch for a new queue,
-- ARGV[4] a fresh entry token, used only to move a live turn,
-- ARGV[5] the per-account limit, 0 for no check,
-- KEYS[9] queue:proof:{e}:<challenge>, only with a proof of work
-- ARGV[6] the draw's time (Unix ms), 0 for no pre-queue, ARGV[7] a fresh
-- draw ticket, ARGV[8] its rank (draw, queue_draw.lua), ARGV[9] until when
-- (Unix ms) the proof of work is remembered as used, ARGV[10] the epoch of
-- the figures the instance read in the current tick window ("" for none:
-- the script then reads the whole stats hash at once), ARGV[11] whether
-- they say sold out and ARGV[12] whether they say paused ("1" or "0")
--
-- A join with a proof of work (KEYS[9]) takes it once: a proof used before
-- is refused ("proof_used") and nothing changes.
--
-- With a pre-queue not yet drawn: before the draw's time the account enters
-- the pre-queue (keeping its ticket if it has one, its session updated);
-- at or after it, the join draws first (draw, from queue_draw.lua).
--
-- Returns {state, sequence, now, figures}, now the Redis clock (Unix ms)
-- when the reply carries the stats hash and 0 otherwise (TIME is read only
-- for the hash and the pre-queue: a fan placed with the instance's figures
-- is placed on their clock, as a poll is),
-- state one of "limit_reached", "proof_used", "admitted", "rejoined", "joined",
-- "sold_out"; or {"prequeue", 0, now, figures, ticket, entrants}. figures
-- is the queue's whole stats hash (as HGETALL) for "joined" and "rejoined"
-- unless the instance's figures (ARGV[10] to ARGV[12]) have its epoch,
-- sold-out mark and paused mark (which an admin's pause writes at once),
-- and otherwise the queue's epoch alone, a string ("" for
-- none): a fan in line is placed with figures of the current tick window,
-- as a poll is (store.Queue.Position), and the reply stays small.
-- clock returns the Redis clock (Unix ms), read once.
local now = 0
local function clock()
  if now == 0 then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end

local limit = tonumber(ARGV[5])
if limit > 0 and tonumber(redis.call('HGET', KEYS[6], ARGV[1]) or '0') >= limit then
  return {'limit_reached', 0, now, ''}
end

if KEYS[9] and not redis.call('SET', KEYS[9], '1', 'NX', 'PXAT', ARGV[9]) then
  return {'proof_used', 0, now, ''}
end

-- The queue's epoch, sold-out, paused and draw marks, read once: with the
-- whole stats hash (stats, kept for the reply until a write changes the
-- hash) when the instance has no figures of the window, else alone (the
-- draw mark only for an event with a pre-queue: a field the hash lacks is
-- the costliest to look for).
local draw_at = tonumber(ARGV[6])
local stats, epoch, sold_out, paused, drawn
if ARGV[10] == '' then
  stats = redis.call('HGETALL', KEYS[4])
  for i = 1, #stats, 2 do
    local k, v = stats[i], stats[i + 1]
    if k == 'epoch' then
      epoch = v
    elseif k == 'sold_out' then
      sold_out = v
    elseif k == 'paused' then
      paused = v
    elseif k == 'drawn' then
      drawn = v
    end
  end
elseif draw_at > 0 then
  local f = redis.call('HMGET', KEYS[4], 'epoch', 'sold_out', 'paused', 'drawn')
  epoch, sold_out, paused, drawn = f[1], f[2], f[3], f[4]
else
  local f = redis.call('HMGET', KEYS[4], 'epoch', 'sold_out', 'paused')
  epoch, sold_out, paused = f[1], f[2], f[3]
end
sold_out = sold_out == '1'
paused = paused == '1'

-- keep_epoch gives the queue an epoch if it has none.
local function keep_epoch()
  if not epoch then
    epoch = ARGV[3]
    redis.call('HSET', KEYS[4], 'epoch', epoch)
    stats = nil
  end
end

-- answer is the reply {state, seq, now, figures} for a fan in line: figures
-- the epoch alone when the instance's figures have the queue's epoch,
-- sold-out mark and paused mark, else the stats hash, read at now.
local function answer(state, seq)
  if epoch == ARGV[10] and sold_out == (ARGV[11] == '1') and paused == (ARGV[12] == '1') then
    return {state, seq, 0, epoch}
  end
  return {state, seq, clock(), stats or redis.call('HGETALL', KEYS[4])}
end

if draw_at > 0 and drawn ~= '1' then
  if clock() < draw_at then
    local ticket = ARGV[7]
    local v = redis.call('HGET', KEYS[8], ARGV[1])
    if v then
      ticket = string.sub(v, 1, 32)
    else
      redis.call('ZADD', KEYS[7], 0, ARGV[8] .. ':' .. ticket .. ':' .. ARGV[1])
    end
    redis.call('HSET', KEYS[8], ARGV[1], ticket .. '|' .. ARGV[2])
    keep_epoch()
    return {'prequeue', 0, now, epoch, ticket, redis.call('ZCARD', KEYS[7])}
  end
  draw(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[7], KEYS[8], ARGV[3])
  epoch, stats = redis.call('HGET', KEYS[4], 'epoch'), nil
end

local entry = redis.call('GET', KEYS[5])
if entry then
  local bar = string.find(entry, '|', 1, true)
  if not bar or string.sub(entry, bar + 1) ~= ARGV[2] then
    redis.call('SET', KEYS[5], ARGV[4] .. '|' .. ARGV[2], 'KEEPTTL')
  end
  return {'admitted', 0, now, epoch or ''}
end

-- Every place has its session in queue:sess:{e} (written with the place
-- here and by the draw, removed with it by admission), so a fan without
-- one has no place, and the place is read (ZSCORE) only for a fan with
-- one, or after a sell-out; the binding is written only when it changes.
local bound = redis.call('HGET', KEYS[3], ARGV[1])
local seq
if bound or sold_out then
  seq = redis.call('ZSCORE', KEYS[1], ARGV[1])
end
if seq then
  if bound ~= ARGV[2] then
    redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
  end
  return answer('rejoined', seq)
end

if sold_out then
  return {'sold_out', 0, now, epoch or ''}
end

seq = redis.call('INCR', KEYS[2])
if redis.call('ZADD', KEYS[1], 'NX', seq, ARGV[1]) == 0 then
  -- a place whose binding was lost (queue:sess:{e} evicted or restored
  -- apart): the sequence is given back, unseen, and the place kept
  redis.call('DECR', KEYS[2])
  seq = redis.call('ZSCORE', KEYS[1], ARGV[1])
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
  return answer('rejoined', seq)
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
keep_epoch()
return answer('joined', seq)
