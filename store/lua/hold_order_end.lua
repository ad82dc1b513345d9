-- Ends an order's claim on its seats' holds once the order can no longer be
-- paid (failed, refunded): each seat:order key that still names the order
-- goes, so that the buyer may release those holds again (hold_release.lua,
-- hold_leave.lua), which otherwise last until their expiry. A key that names
-- another order (a newer checkout's) stays.
-- KEYS[1..] seat:order:{e}:<label>, one per seat of the order
-- ARGV[1] order id
-- Returns the number of keys ended.
local ended = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    ended = ended + 1
  end
end
return ended
