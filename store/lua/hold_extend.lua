-- Extends those of an account's holds that it still holds.
-- KEYS[1] hold:{e}:{acct}, KEYS[2] held:{e}, KEYS[3..] seat:lock:{e}:<label>
-- ARGV[1] account id, ARGV[2] TTL (ms), ARGV[3..] labels in KEYS' order.
-- Each still-held seat's expiry becomes now + TTL unless it was later
-- already. Returns the labels no longer held by the account.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local acct, exp = ARGV[1], now + tonumber(ARGV[2])
local lost = {}
for i = 3, #KEYS do
  local label = ARGV[i]
  local score = redis.call('ZSCORE', KEYS[1], label)
  if score and tonumber(score) >= now and redis.call('GET', KEYS[i]) == acct then
    if tonumber(score) < exp then
      redis.call('SET', KEYS[i], acct, 'PXAT', exp)
      redis.call('ZADD', KEYS[1], exp, label)
      redis.call('ZADD', KEYS[2], exp, label)
    end
  else
    lost[#lost + 1] = label
    if score then
      redis.call('ZREM', KEYS[1], label)
    end
  end
end
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if top[2] then
  redis.call('PEXPIREAT', KEYS[1], top[2])
end
return lost
