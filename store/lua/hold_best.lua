-- Holds the best quantity free seats side by side in one run of a row for
-- one account, all of them or none (best available; DESIGN rules 1, 2 and
-- 5). The caller names the runs it considers, best first: a run is seats
-- side by side in one row of one grade, in their order along the row. The
-- script picks, in the first run that has one, the block of quantity free
-- seats nearest the run's best seat that leaves no single free seat
-- stranded; only when allowed to (ARGV[7]) and no run considered has such a
-- block does it take the first block that strands one.
-- KEYS[1..10] as hold.lua's: cache marker, sold:{e}, bought:{e},
-- hold:{e}:{acct}, held:{e}, holder:{e}, claimed:{e}, entry:{e}:{acct},
-- entry:live:{e}, blocked:{e}
-- KEYS[11..] seat:lock:{e}:<label>, one per seat of the runs, in ARGV's
-- order
-- ARGV[1] account id, ARGV[2] limit, ARGV[3] TTL (ms), ARGV[4] '1' when
-- KEYS[1] is cache:complete:{e}, ARGV[5] the session key the entry token
-- must be bound to ('' for no check), ARGV[6] quantity, ARGV[7] '1' when a
-- block may strand a seat, ARGV[8] number of runs r, then per run its
-- length and the position (from 1) of its best seat (ARGV[9..8+2r]), then
-- the labels of all runs in order.
-- Returns {'no_entry', reason} or {'rebuild'} as hold.lua; or {outcome, now
-- (ms), owned, {label, expiry, ...} of the account's live holds after the
-- call, ...} with outcome 'limit' (quantity is more than the account may
-- still hold); 'ok' and then the expiry (ms), {labels held} in their order
-- along the row, how many leading runs have no block of quantity free seats
-- at all, and the position (from 1) of the run they are in; or 'none' (no
-- run has a block that may be taken) and then the free seats of the runs
-- and 1 when a run has a block that strands a seat (0 otherwise).
-- hold_start, prune_holds, seat_state, hold_seat and trim_held come from
-- hold_shopper.lua.
local ended, now = hold_start()
if ended then
  return ended
end
local acct, limit, ttl, stale = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
local quantity, may_strand, runs = tonumber(ARGV[6]), ARGV[7] == '1', tonumber(ARGV[8])
local first_key, first_label = 11, 9 + 2 * runs

prune_holds(KEYS[4], KEYS[2], now)
local owned = tonumber(redis.call('HGET', KEYS[3], acct) or '0')
if owned + redis.call('ZCARD', KEYS[4]) + quantity > limit then
  return {'limit', now, owned, redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')}
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
local pick, pick_base, pick_run, fallback, fallback_base, fallback_run
local base = 0
for r = 1, runs do
  local n, best = tonumber(ARGV[7 + 2 * r]), tonumber(ARGV[8 + 2 * r])
  local free = {}
  for k = 1, n do
    local i = base + k
    free[k] = seat_state(ARGV[first_label + i - 1], KEYS[first_key + i - 1], KEYS[2], KEYS[10], KEYS[4], KEYS[7], acct, stale) == 'new'
    if free[k] then
      free_seats = free_seats + 1
    end
  end
  local start, strands = best_block(free, n, best)
  if start == nil then
    if none_before then
      skipped = skipped + 1
    end
  else
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
  return {'none', now, owned, redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES'), free_seats, strands}
end

local exp = now + ttl
local held = {}
for k = pick, pick + quantity - 1 do
  local i = pick_base + k
  hold_seat(ARGV[first_label + i - 1], KEYS[first_key + i - 1], KEYS[4], KEYS[5], KEYS[6], acct, exp)
  held[#held + 1] = ARGV[first_label + i - 1]
end
trim_held(KEYS[4], KEYS[5], KEYS[6], now)
return {'ok', now, owned, redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES'), exp, held, skipped, pick_run}
