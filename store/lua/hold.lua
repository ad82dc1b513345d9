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
-- KEYS[11..n-1] seat:lock:{e}:<label>, one per requested seat, in ARGV's order
-- KEYS[n] (the last) hold:order:{e}:{acct}, hash label -> order awaiting
--         payment (hold_extend.lua), for the reply
-- ARGV[1] account id, ARGV[2] limit, ARGV[3] TTL (ms), ARGV[4] '1' when
-- KEYS[1] is cache:complete:{e} ('0' otherwise), ARGV[5] the session key the
-- entry token must be bound to ('' for no check), ARGV[6..] labels
-- Returns {'no_entry', reason} (reason 'none', 'expired' or
-- 'other_session'); {'rebuild'} without the cache's marker; or
-- {outcome, now (ms), owned, {label, expiry, ...} of the account's live
-- holds after the call, ...} with outcome 'taken' and then {labels taken
-- (held by another account, sold or blocked)} and {those of them blocked},
-- 'limit', or 'ok' and then the first expiry (ms) of the requested seats
-- and how many of them this call held anew (the others the account held
-- already).
-- Times come from Redis's clock. A hold is live while its expiry >= now,
-- as a key with PXAT expiry is. On a copy past its TTL, a seat recorded in
-- KEYS[7] counts as taken even after its claim ended: the sale may have
-- committed with no MarkSold, and no load since has read it.
-- The account's holds are read once (prune_holds) and the reply built from
-- that read; the requested seats' sold, blocked and lock states are read
-- with one command each (seat_states), however many they are.
-- hold_start, prune_holds, holds_reply, seat_states, hold_seats and
-- trim_held come from hold_shopper.lua.
local ended, now = hold_start()
if ended then
  return ended
end
local acct, limit, ttl, stale = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
local first_label = 11

-- At most limit entries remain.
local held, live = prune_holds(KEYS[4], KEYS[2], now)
local owned = tonumber(redis.call('HGET', KEYS[3], acct) or '0')

local labels, locks = {}, {}
for i = first_label, #KEYS - 1 do
  labels[#labels + 1], locks[#locks + 1] = ARGV[i - 5], KEYS[i]
end
local states, blocked = seat_states(labels, locks, KEYS[2], KEYS[10], live, KEYS[7], acct, stale)
local taken, taken_blocked, new, new_locks = {}, {}, {}, {}
for k, state in ipairs(states) do
  if state == 'new' then
    new[#new + 1], new_locks[#new_locks + 1] = labels[k], locks[k]
  elseif state ~= 'mine' then
    taken[#taken + 1] = labels[k]
    if blocked[k] == 1 then
      taken_blocked[#taken_blocked + 1] = labels[k]
    end
  end
end
if #taken > 0 then
  return {'taken', now, owned, holds_reply(KEYS[#KEYS], live), taken, taken_blocked}
end

if owned + held + #new > limit then
  return {'limit', now, owned, (holds_reply(KEYS[#KEYS], live))}
end

local exp = now + ttl
local mine, last = holds_reply(KEYS[#KEYS], live, new, exp)
if #new > 0 then
  hold_seats(new, new_locks, KEYS[4], KEYS[5], KEYS[6], acct, exp, last)
end
trim_held(KEYS[5], KEYS[6], now)

-- The first expiry of the requested seats: a fresh hold's, or an earlier
-- one of a seat the account held already (whose hold keeps its expiry, a
-- later one included, as an order's payment window makes it).
local first
if #new > 0 then
  first = exp
end
for _, label in ipairs(labels) do
  if live[label] then
    first = math.min(first or live[label], live[label])
  end
end

return {'ok', now, owned, mine, first, #new}
