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
-- seats are sold, blocked or held) and is passed over unread. A run read
-- that has no quantity seats side by side neither sold nor blocked leaves
-- the zset; one that has them, but not free of holds, leaves it for the
-- zset of parked runs, scored with the first expiry of its holds, and
-- comes back when that time has come (at the start of every pick), or
-- when a hold of it is released first (hold_release.lua, hold_leave.lua,
-- hold_release_order.lua put its run back). The reply names the runs the
-- zset lists from where the next pick should begin, so that the caller
-- sends only those.
-- KEYS[1..10] as hold.lua's: cache marker, sold:{e}, bought:{e},
-- hold:{e}:{acct}, held:{e}, holder:{e}, claimed:{e}, entry:{e}:{acct},
-- entry:live:{e}, blocked:{e}
-- KEYS[11] best:gen:{e}, KEYS[12] the index's zset of the grade for
-- quantity, KEYS[13] its zset of parked runs (member "<rank> <first
-- label>", score the time (ms) it comes back)
-- KEYS[14..] seat:lock:{e}:<label>, one per seat of the runs, in ARGV's
-- order, and last hold:order:{e}:{acct} as hold.lua's
-- ARGV[1] account id, ARGV[2] limit, ARGV[3] TTL (ms), ARGV[4] '1' when
-- KEYS[1] is cache:complete:{e}, ARGV[5] the session key the entry token
-- must be bound to ('' for no check), ARGV[6] quantity, ARGV[7] '1' when a
-- block may strand a seat, ARGV[8] how many runs of the index the reply
-- names at most, ARGV[9] number of runs r, then per run its length, the
-- position (from 1) of its best seat and its rank (ARGV[10..9+3r]), then
-- the labels of all runs in order.
-- Returns {'no_entry', reason} or {'rebuild'} as hold.lua; {'index'} when
-- the zsets are not built for the index's generation (hold_best_index.lua
-- builds them); or {outcome, now (ms), owned, {label, expiry, ...} of the
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
-- hold_start, prune_holds, holds_reply, seat_states, hold_seats and
-- trim_held come from hold_shopper.lua.
local ended, now = hold_start()
if ended then
  return ended
end
local acct, limit, ttl, stale = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
local quantity, may_strand, listed, runs = tonumber(ARGV[6]), ARGV[7] == '1', tonumber(ARGV[8]), tonumber(ARGV[9])
local first_key, first_label = 14, 10 + 3 * runs

local held, live = prune_holds(KEYS[4], KEYS[2], now)
local owned = tonumber(redis.call('HGET', KEYS[3], acct) or '0')
if owned + held + quantity > limit then
  return {'limit', now, owned, (holds_reply(KEYS[#KEYS], live))}
end
local sentinel = -1 - tonumber(redis.call('GET', KEYS[11]) or '0')
if tonumber(redis.call('ZSCORE', KEYS[12], '')) ~= sentinel or tonumber(redis.call('ZSCORE', KEYS[13], '')) ~= sentinel then
  return {'index'}
end

-- Parked runs whose first hold has ended come back (the sentinel's score is
-- negative, a time never is).
local due = redis.call('ZRANGEBYSCORE', KEYS[13], 0, now)
if #due > 0 then
  local batch = {}
  for _, m in ipairs(due) do
    local rank, label = string.match(m, '^(%d+) (.+)$')
    batch[#batch + 1] = rank
    batch[#batch + 1] = label
    if #batch >= 1000 then
      redis.call('ZADD', KEYS[12], unpack(batch))
      batch = {}
    end
  end
  if #batch > 0 then
    redis.call('ZADD', KEYS[12], unpack(batch))
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[13], 0, now)
end

-- listed_from returns the first labels of up to listed runs of the index
-- from rank on.
local function listed_from(rank)
  return redis.call('ZRANGEBYSCORE', KEYS[12], rank, '+inf', 'LIMIT', 0, listed)
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

-- read_run reads the run of n seats from base (ARGV's and KEYS' order) and
-- keeps the index: a run with no quantity seats side by side neither sold
-- nor blocked leaves it; one with them but not free of holds (the
-- account's own included) is parked until the first of those holds ends.
-- Returns the seats' freedom (true: free to hold) and how many are free.
local function read_run(rank, base, n)
  local labels, locks = {}, {}
  for k = 1, n do
    labels[k], locks[k] = ARGV[first_label + base + k - 1], KEYS[first_key + base + k - 1]
  end
  local states = seat_states(labels, locks, KEYS[2], KEYS[10], live, KEYS[7], acct, stale)
  local free, count, stretch, longest, open, longest_open, holds = {}, 0, 0, 0, 0, 0, {}
  for k, state in ipairs(states) do
    free[k] = state == 'new'
    if free[k] then
      count = count + 1
    end
    if state == 'gone' then
      stretch, open = 0, 0
    else
      stretch = stretch + 1
      longest = math.max(longest, stretch)
      if state == 'held' or state == 'mine' then
        open = 0
        holds[#holds + 1] = locks[k]
      else
        open = open + 1
        longest_open = math.max(longest_open, open)
      end
    end
  end
  if longest < quantity then
    redis.call('ZREM', KEYS[12], labels[1])
  elseif longest_open < quantity then
    -- Every hold's lock expires when the hold ends (PXAT): the first
    -- expiry is when the run may next give the block, unless a release
    -- puts it back before.
    local back
    for _, lock in ipairs(holds) do
      local at = redis.call('PEXPIRETIME', lock)
      if at > 0 then
        back = math.min(back or at, at)
      end
    end
    if back ~= nil and back > now then
      redis.call('ZREM', KEYS[12], labels[1])
      redis.call('ZADD', KEYS[13], back, rank .. ' ' .. labels[1])
    end
  end
  return free, count
end

local free_seats, skipped, none_before = 0, 0, true
local pick, pick_base, pick_run, fallback, fallback_base, fallback_run, first_block
local base = 0
for r = 1, runs do
  local n, best, rank = tonumber(ARGV[7 + 3 * r]), tonumber(ARGV[8 + 3 * r]), ARGV[9 + 3 * r]
  local start, strands
  if redis.call('ZSCORE', KEYS[12], ARGV[first_label + base]) then
    local free, count = read_run(rank, base, n)
    free_seats = free_seats + count
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
  return {'none', now, owned, (holds_reply(KEYS[#KEYS], live)), free_seats, strands, listed_from(ARGV[12])}
end

local exp = now + ttl
local picked, locks = {}, {}
for k = pick, pick + quantity - 1 do
  local i = pick_base + k
  picked[#picked + 1] = ARGV[first_label + i - 1]
  locks[#locks + 1] = KEYS[first_key + i - 1]
end
local mine, last = holds_reply(KEYS[#KEYS], live, picked, exp)
hold_seats(picked, locks, KEYS[4], KEYS[5], KEYS[6], acct, exp, last)
trim_held(KEYS[5], KEYS[6], now)
local from = pick_run
if may_strand then
  from = first_block
end
return {'ok', now, owned, mine, exp, picked, skipped, pick_run, listed_from(ARGV[9 + 3 * from])}
