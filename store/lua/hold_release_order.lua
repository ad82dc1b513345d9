-- Ends the holds of an order that its expiry found due, unless the order's
-- marker is there: the holds were released already (by another instance
-- that found the order due too, or a retry) or claimed by the order's
-- confirmation (hold_claim.lua). So no late call ends a hold the account took
-- after the first release, nor the claim of a seat being sold (Orders.
-- ExpireOrders says why).
-- KEYS[1] order:holds:{e}:<order>  the order's marker
-- KEYS[2] hold:{e}:{acct}, KEYS[3] held:{e}, KEYS[4] holder:{e},
-- KEYS[5..] seat:lock:{e}:<label>, one per seat, in ARGV's order
-- ARGV[1] account id, ARGV[2] the marker's TTL (ms), ARGV[3..] labels
-- Each seat is released as hold_release.lua releases one: only a hold of
-- the account ends. Returns 1 when it released, 0 when the marker was there.
if not redis.call('SET', KEYS[1], 'released', 'NX', 'PX', ARGV[2]) then
  return 0
end
for i = 5, #KEYS do
  local label = ARGV[i - 2]
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[3], label)
    redis.call('HDEL', KEYS[4], label)
  end
  redis.call('ZREM', KEYS[2], label)
end
return 1
