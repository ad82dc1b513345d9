-- Ends an order's claim on its seats' holds once the order can no longer be
-- paid (failed, refunded): each seat:order key that still names the order
-- goes, so that the buyer may release those holds again (hold_release.lua,
-- hold_leave.lua), which otherwise last until their expiry, and so does the
-- seat's entry in the account's index of them (hold:order:{e}:{acct},
-- hold_extend.lua). A key that names another order (a newer checkout's)
-- stays.
-- KEYS[1] hold:order:{e}:{acct}, KEYS[2..] seat:order:{e}:<label>, one per
-- seat of the order
-- ARGV[1] order id, ARGV[2..] the seats' labels, in KEYS' order
-- Returns the number of keys ended.
local ended = 0
for i = 2, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    ended = ended + 1
  end
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[1] then
    redis.call('HDEL', KEYS[1], ARGV[i])
  end
end
return ended
