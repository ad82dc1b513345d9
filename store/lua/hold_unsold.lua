-- Records a committed refund: the seats are no longer sold, the buyer's
-- bought count falls by the refunded tickets (never under 0), and the
-- event's refund count rises, so that a load of the sold-seat copy that read
-- PostgreSQL before the refund committed writes nothing (hold_cache.lua).
-- KEYS[1] sold:{e}, KEYS[2] bought:{e}, KEYS[3] refunds:{e}
-- ARGV[1] account id, ARGV[2..] labels.
redis.call('INCR', KEYS[3])
for i = 2, #ARGV do
  redis.call('SREM', KEYS[1], ARGV[i])
end
local left = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') - (#ARGV - 1)
if left > 0 then
  redis.call('HSET', KEYS[2], ARGV[1], left)
else
  redis.call('HDEL', KEYS[2], ARGV[1])
end
return 1
