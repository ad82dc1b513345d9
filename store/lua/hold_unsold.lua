-- Records a committed refund: the seats are no longer sold, the buyer's
-- bought count falls by the refunded tickets (never under 0), the event's
-- refund count rises, so that a load of the sold-seat copy that read
-- PostgreSQL before the refund committed writes nothing (hold_cache.lua),
-- and the seats' runs are back in best available's index (index_runs, from
-- hold_index.lua).
-- KEYS[1] sold:{e}, KEYS[2] bought:{e}, KEYS[3] refunds:{e},
-- KEYS[4] best:gen:{e}, KEYS[5..] zsets of the index
-- ARGV[1] account id, ARGV[2] number of labels n, ARGV[3..2+n] labels,
-- then index_runs' arguments.
local n = tonumber(ARGV[2])
redis.call('INCR', KEYS[3])
for i = 3, 2 + n do
  redis.call('SREM', KEYS[1], ARGV[i])
end
local left = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') - n
if left > 0 then
  redis.call('HSET', KEYS[2], ARGV[1], left)
else
  redis.call('HDEL', KEYS[2], ARGV[1])
end
index_runs(KEYS[4], 3 + n)
return 1
