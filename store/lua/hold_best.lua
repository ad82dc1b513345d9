-- Holds the best quantity free seats side by side in one run of a row for
-- one account, all of them or none (best available; DESIGN rules 1, 2 and
-- 5). The caller names the runs it considers, best first: a run is seats
-- side by side in one row of one grade, in their order along the row. The
-- script picks, in the first run that has one, the block of quantity free
-- seats nearest the run's best seat that leaves no single free seat
-- stranded; only when allowed to (ARGV[7]) and no run considered has such a
-- block does it take the first block that strands one.
-- It reads and keeps best available's index (see hold_index.lua): a run
-- the grade's zset for quantity does not list cannot give the block (its
-- seats are sold or blocked) and is passed over unread, and a run read
-- that has no quantity seats side by side neither sold nor blocked leaves
-- the zset. The reply names the runs the zset lists from where the next
-- pick should begin, so that the caller sends only those.
-- KEYS[1..10] as hold.lua's: cache marker, sold:{e}, bought:{e},
-- hold:{e}:{acct}, held:{e}, holder:{e}, claimed:{e}, entry:{e}:{acct},
-- entry:live:{e}, blocked:{e}
-- KEYS[11] best:gen:{e}, KEYS[12] the index's zset of the grade for
-- quantity
-- KEYS[13..] seat:lock:{e}:<label>, one per seat of the runs, in ARGV's
-- order
-- ARGV[1] account id, ARGV[2] limit, ARGV[3] TTL (ms), ARGV[4] '1' when
-- KEYS[1] is cache:complete:{e}, ARGV[5] the session key the entry token
-- must be bound to ('' for no check), ARGV[6] quantity, ARGV[7] '1' when a
-- block may strand a seat, ARGV[8] how many runs of the index the reply
-- names at most, ARGV[9] number of runs r, then per run its length, the
-- position (from 1) of its best seat and its rank (ARGV[10..9+3r]), then
-- the labels of all runs in order.
-- Returns {'no_entry', reason} or {'rebuild'} as hold.lua; {'index'} when
-- the zset is not built for the index's generation (hold_best_index.lua
-- builds it); or {outcome, now (ms), owned, {label, expiry, ...} of the
-- account's live holds after the call, ...} with outcome 'limit' (quantity
-- is more than the account may still hold); 'ok' and then the expiry (ms),
-- {labels held} in their order along the row, how many leading runs have
-- no block of quantity free seats at all, the position (from 1) of the run
-- they are in, and {first labels} of the runs the zset lists from the rank
-- of the first run with a block (without ARGV[7], of the run picked); or
-- 'none' (no run has a block that may be taken) and then the free seats of
-- the runs, 1 when a run has a block that strands a seat (0 otherwise), and
-- {first labels} of the runs the zset lists from the rank of the first run
-- sent.
-- hold_start, prune_holds, seat_state, hold_seats and trim_held come from
-- hold_shopper.lua.
local ended, now = hold_start()
if ended then
  return ended
end
local acct, limit, ttl, stale = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
local quantity, may_strand, listed, runs = tonumber(ARGV[6]), ARGV[7] == '1', tonumber(ARGV[8]), tonumber(ARGV[9])
local first_key, first_label = 13, 10 + 3 * runs

prune_holds(KEYS[4], KEYS[2], now)
local owned = tonumber(redis.call('HGET', KEYS[3], acct) or '0')
if owned + redis.call('ZCARD', KEYS[4]) + quantity > limit then
  return {'limit', now, owned, redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')}
end
if tonumber(redis.call('ZSCORE', KEYS[12], '')) ~= -1 - tonumber(redis.call('GET', KEYS[11]) or '0') then
  return {'index'}
end

-- listed_from returns the first labels of up to listed runs of the index
-- from rank on.
local function listed_from(rank)
  return redis.call('ZRANGEBYSCORE', KEYS[12], rank, '+inf', 'LIMIT', 0, listed)
end

-- gone says whether the seat label is sold or blocked.
local function gone(label)
  return redis.call('SISMEMBER', KEYS[2], label) == 1 or redis.call('SISMEMBER', KEYS[10], label) == 1
end

-- best_block returns the start (from 1) of the best block of quantity free
-- seats in free[1..n] for a run whose best seat is at best, and whether it
-- strands a single free seat; nil when the run has no such block.
local function best_block(free, n, best)
  local start, strands, dist
  local a = 1
  while a <= n do
    if free[a] then
      local b = a
      while b < n and free[b + 1] do
        b = b + 1
      end
      for s = a, b - quantity + 1 do
        local e = s + quantity - 1
        local st = s - a == 1 or b - e == 1
        local d = math.abs(s + e - 2 * best)
        if start == nil or (strands and not st) or (st == strands and d < dist) then
          start, strands, dist = s, st, d
        end
      end
      a = b + 1
    else
      a = a + 1
    end
  end
  return start, strands
end

local free_seats, skipped, none_before = 0, 0, true
local pick, pick_base, pick_run, fallback, fallback_base, fallback_run, first_block
local base = 0
for r = 1, runs do
  local n, best = tonumber(ARGV[7 + 3 * r]), tonumber(ARGV[8 + 3 * r])
  local start, strands
  local member = ARGV[first_label + base]
  if redis.call('ZSCORE', KEYS[12], member) then
    local free, stretch, longest = {}, 0, 0
    for k = 1, n do
      local i = base + k
      local label = ARGV[first_label + i - 1]
      local state = seat_state(label, KEYS[first_key + i - 1], KEYS[2], KEYS[10], KEYS[4], KEYS[7], acct, stale)
      free[k] = state == 'new'
      if free[k] then
        free_seats = free_seats + 1
      end
      if state == 'taken' and gone(label) then
        stretch = 0
      else
        stretch = stretch + 1
        longest = math.max(longest, stretch)
      end
    end
    if longest < quantity then
      redis.call('ZREM', KEYS[12], member)
    end
    start, strands = best_block(free, n, best)
  end
  if start == nil then
    if none_before then
      skipped = skipped + 1
    end
  else
    if none_before then
      first_block = r
    end
    none_before = false
    if not strands then
      pick, pick_base, pick_run = start, base, r
      break
    elseif fallback == nil then
      fallback, fallback_base, fallback_run = start, base, r
    end
  end
  base = base + n
end
if pick == nil and may_strand then
  pick, pick_base, pick_run = fallback, fallback_base, fallback_run
end
if pick == nil then
  local strands = 0
  if fallback ~= nil then
    strands = 1
  end
  return {'none', now, owned, redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES'), free_seats, strands, listed_from(ARGV[12])}
end

local exp = now + ttl
local held, locks = {}, {}
for k = pick, pick + quantity - 1 do
  local i = pick_base + k
  held[#held + 1] = ARGV[first_label + i - 1]
  locks[#locks + 1] = KEYS[first_key + i - 1]
end
hold_seats(held, locks, KEYS[4], KEYS[5], KEYS[6], acct, exp)
trim_held(KEYS[4], KEYS[5], KEYS[6], now)
local from = pick_run
if may_strand then
  from = first_block
end
return {'ok', now, owned, redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES'), exp, held, skipped, pick_run, listed_from(ARGV[9 + 3 * from])}
