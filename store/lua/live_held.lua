-- Read the labels of an event's live holds (store.Holds.SaleFigures) at one
-- instant of Redis's clock: a hold is live while its expiry >= now, as the
-- hold scripts count it.
--
-- KEYS[1] held:{e}  zset label -> expiry (ms): index of held seats
--
-- Returns the labels.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')
