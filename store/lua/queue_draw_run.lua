-- Draw an event's pre-queue (store.Queue.Draw) if its time has come by
-- Redis's clock; draw comes from queue_draw.lua.
-- KEYS[1] queue:{e}, KEYS[2] queue:seq:{e}, KEYS[3] queue:sess:{e},
-- KEYS[4] queue:stats:{e}, KEYS[5] prequeue:{e}, KEYS[6] prequeue:acct:{e}
-- ARGV[1] the draw's time (Unix ms), ARGV[2] epoch for a new queue
-- Returns 1 if the event is drawn (now or before), 0 if it is too early.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < tonumber(ARGV[1]) then
  return 0
end
draw(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[2])
return 1
