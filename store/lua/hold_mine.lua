-- Lists an account's live holds, dropping ended ones and those of seats sold
-- since they were held.
-- KEYS[1] hold:{e}:{acct}, KEYS[2] sold:{e}
-- Returns {now (ms), label, expiry (ms), label, expiry, ...}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
local out = {now}
local holds = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #holds, 2 do
  if redis.call('SISMEMBER', KEYS[2], holds[i]) == 1 then
    redis.call('ZREM', KEYS[1], holds[i])
  else
    out[#out + 1] = holds[i]
    out[#out + 1] = tonumber(holds[i + 1])
  end
end
return out
