-- Ends the holds of an order that its expiry found due, unless the order's
-- marker is there: the holds were released already (by another instance
-- that found the order due too, or a retry) or claimed by the order's
-- confirmation (hold_claim.lua). So no late call ends a hold the account took
-- after the first release, nor the claim of a seat being sold (Orders.
-- ExpireOrders says why).
-- KEYS[1] order:holds:{e}:<order>  the order's marker
-- KEYS[2] hold:{e}:{acct}, KEYS[3] held:{e}, KEYS[4] holder:{e},
-- KEYS[5..4+n] seat:lock:{e}:<label>, KEYS[5+n..4+2n] seat:order:{e}:<label>,
-- one of each per seat, in ARGV's order, KEYS[5+2n] best:gen:{e}, then
-- zsets of best available's index
-- ARGV[1] account id, ARGV[2] the marker's TTL (ms), ARGV[3] order id,
-- ARGV[4] n, ARGV[5..4+n] labels, then index_runs' arguments for their runs
-- (from hold_index.lua; they are back in the index: a pick may have parked
-- them for the holds)
-- A seat's hold ends only if it is the hold this order extended: held by
-- the account, its seat:order key naming the order (hold_extend.lua) and
-- expiring when the hold does. A newer hold of the same account on the same
-- seat (taken after this hold ended, or extended by a newer order) has
-- another expiry or another order, and survives. Returns 1 when it
-- released, 0 when the marker was there.
if not redis.call('SET', KEYS[1], 'released', 'NX', 'PX', ARGV[2]) then
  return 0
end
local n = tonumber(ARGV[4])
local ended = 0
for i = 5, 4 + n do
  local label = ARGV[i]
  if redis.call('GET', KEYS[i]) == ARGV[1] and redis.call('GET', KEYS[i + n]) == ARGV[3]
      and redis.call('PEXPIRETIME', KEYS[i]) == redis.call('PEXPIRETIME', KEYS[i + n]) then
    redis.call('DEL', KEYS[i], KEYS[i + n])
    redis.call('ZREM', KEYS[3], label)
    redis.call('HDEL', KEYS[4], label)
    redis.call('ZREM', KEYS[2], label)
    ended = ended + 1
  end
end
if ended > 0 then
  index_runs(KEYS[5 + 2 * n], 5 + n)
end
return 1
