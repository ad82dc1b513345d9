-- Read an event's waiting-room figures (store.Queue.QueueStats) at one
-- instant of Redis's clock, so live tokens are counted as the admitter does.
--
-- KEYS[1] queue:{e}, KEYS[2] queue:seq:{e}, KEYS[3] queue:stats:{e},
-- KEYS[4] entry:live:{e}
--
-- Returns {now (Unix ms), waiting, joined, live tokens, stats as HGETALL}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {
  now,
  redis.call('ZCARD', KEYS[1]),
  tonumber(redis.call('GET', KEYS[2]) or '0'),
  redis.call('ZCOUNT', KEYS[4], now, '+inf'),
  redis.call('HGETALL', KEYS[3]),
}
