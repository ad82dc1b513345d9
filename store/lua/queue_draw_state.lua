-- Read an event's draw as published (store.Queue.DrawState): the number of
-- entrants, and once drawn the tickets in drawn order; before the draw the
-- order stays secret.
-- KEYS[1] queue:stats:{e}, KEYS[2] prequeue:{e}
-- Returns {drawn "1" or "0", entrants, ticket...}.
local drawn = redis.call('HGET', KEYS[1], 'drawn') == '1'
local out = {'0', redis.call('ZCARD', KEYS[2])}
if drawn then
  out[1] = '1'
  for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    out[#out + 1] = string.sub(m, 66, 97)
  end
end
return out
