-- Holds seats for one account: all of them or none (DESIGN rules 1, 2 and 5).
-- KEYS[1] the marker that sold:{e} and bought:{e} may be used:
--         cache:ready:{e} (loaded within the cache's TTL), or, once a load
--         failed because PostgreSQL could not be reached, cache:complete:{e}
--         (loaded once, nothing lost since; ARGV[4] is then '1')
-- KEYS[2] sold:{e}          set of sold labels
-- KEYS[3] bought:{e}        hash account -> tickets bought
-- KEYS[4] hold:{e}:{acct}   zset label -> expiry (ms): the account's holds
-- KEYS[5] held:{e}          zset label -> expiry (ms): index of held seats
-- KEYS[6] holder:{e}        hash label -> account: index of holders
-- KEYS[7] claimed:{e}       zset label -> claim time (ms): seats claimed
--                           for a sale that sold:{e} may not have yet
-- KEYS[8] entry:{e}:{acct}  the account's entry token, "<token>|<session key>"
-- KEYS[9] entry:live:{e}    zset account -> token expiry: tokens ever issued
-- KEYS[10] blocked:{e}      set of labels an admin blocked (like sold seats)
-- KEYS[11..] seat:lock:{e}:<label>, one per requested seat, in ARGV's order
-- ARGV[1] account id, ARGV[2] limit, ARGV[3] TTL (ms), ARGV[4] '1' when
-- KEYS[1] is cache:complete:{e} ('0' otherwise), ARGV[5] the session key the
-- entry token must be bound to ('' for no check), ARGV[6..] labels
-- Returns {'no_entry', reason} (reason 'none', 'expired' or
-- 'other_session'); {'rebuild'} without the cache's marker; or
-- {outcome, now (ms), owned, {label, expiry, ...} of the account's live
-- holds after the call, ...} with outcome 'taken' and then {labels taken
-- (held by another account, sold or blocked)} and {those of them blocked},
-- 'limit', or 'ok' and then the first expiry (ms) of the requested seats.
-- Times come from Redis's clock. A hold is live while its expiry >= now,
-- as a key with PXAT expiry is. On a copy past its TTL, a seat recorded in
-- KEYS[7] counts as taken even after its claim ended: the sale may have
-- committed with no MarkSold, and no load since has read it.
-- hold_start, prune_holds, seat_state, hold_seats and trim_held come
-- from hold_shopper.lua.
local ended, now = hold_start()
if ended then
  return ended
end
local acct, limit, ttl, stale = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
local first_label = 11

-- At most limit entries remain.
local held = prune_holds(KEYS[4], KEYS[2], now)
local owned = tonumber(redis.call('HGET', KEYS[3], acct) or '0')

local taken, blocked, new = {}, {}, {}
for i = first_label, #KEYS do
  local state = seat_state(ARGV[i - 5], KEYS[i], KEYS[2], KEYS[10], KEYS[4], KEYS[7], acct, stale)
  if state == 'taken' then
    taken[#taken + 1] = ARGV[i - 5]
    if redis.call('SISMEMBER', KEYS[10], ARGV[i - 5]) == 1 then
      blocked[#blocked + 1] = ARGV[i - 5]
    end
  elseif state == 'new' then
    new[#new + 1] = i
  end
end
if #taken > 0 then
  return {'taken', now, owned, redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES'), taken, blocked}
end

if owned + held + #new > limit then
  return {'limit', now, owned, redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')}
end

local exp = now + ttl
if #new > 0 then
  local labels, locks = {}, {}
  for k, i in ipairs(new) do
    labels[k], locks[k] = ARGV[i - 5], KEYS[i]
  end
  hold_seats(labels, locks, KEYS[4], KEYS[5], KEYS[6], acct, exp)
end
-- The account's holds, read once: the reply, their latest expiry for
-- trim_held (the last pair) and the first expiry of the requested seats.
local mine = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
trim_held(KEYS[4], KEYS[5], KEYS[6], now, mine[#mine])

local asked = {}
for i = first_label, #KEYS do
  asked[ARGV[i - 5]] = true
end
local first = exp
for i = 1, #mine, 2 do
  if asked[mine[i]] then
    first = math.min(first, tonumber(mine[i + 1]))
  end
end

return {'ok', now, owned, mine, first}
