-- Extends those of an account's holds that it still holds, and its turn,
-- for an order's payment window, and records that order on each hold.
-- KEYS[1] hold:{e}:{acct}, KEYS[2] held:{e}, KEYS[3] entry:{e}:{acct},
-- KEYS[4] entry:live:{e}, KEYS[5] hold:order:{e}:{acct},
-- KEYS[6..5+n] seat:lock:{e}:<label>, KEYS[6+n..5+2n] seat:order:{e}:<label>,
-- one of each per seat, in ARGV's order
-- ARGV[1] account id, ARGV[2] TTL (ms), ARGV[3] order id, ARGV[4..] labels.
-- Each still-held seat's expiry becomes now + TTL unless it was later
-- already, and its seat:order key names the order, expiring at the very
-- millisecond the hold does: the order's expiry (hold_release_order.lua)
-- ends the hold only while both say so, and while it does the account
-- cannot release the seat (hold_release.lua, hold_leave.lua). When a seat is
-- no longer held, the checkout cancels the order (hold_lost), and after it
-- replaced the account's older order no order of the account is payable:
-- then no seat keeps a seat:order key (the still-held seats are extended
-- all the same, and the fan may release them), and the turn is not
-- extended. Otherwise the account's entry token, while it lives, lasts at
-- least until now + TTL too (its expiry in entry:live:{e} with it), so that
-- the turn outlives the order's payment window and the fan may come back
-- to pay or check out again; a token that ended (ran out, left, done) stays
-- ended, and one that lasts longer is not shortened. hold:order:{e}:{acct}
-- becomes the account's index of its seat:order keys, label -> order,
-- expiring with the last of them (none when a seat was lost), so that the
-- hold scripts' replies and the seat statuses can tell which holds are in
-- the order (hold_shopper.lua's holds_reply) without knowing the labels
-- before they run; the rule itself stays with the seat:order keys.
-- Returns the labels no longer held by the account.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local acct, exp, order = ARGV[1], now + tonumber(ARGV[2]), ARGV[3]
local n = (#KEYS - 5) / 2
local lost, scored, stamps = {}, {}, {}
for i = 6, 5 + n do
  local label = ARGV[i - 2]
  local score = redis.call('ZSCORE', KEYS[1], label)
  if score and tonumber(score) >= now and redis.call('GET', KEYS[i]) == acct then
    local ends
    if tonumber(score) < exp then
      ends = exp
      redis.call('SET', KEYS[i], acct, 'PXAT', exp)
      scored[#scored + 1], scored[#scored + 2] = exp, label
    else
      ends = redis.call('PEXPIRETIME', KEYS[i])
    end
    stamps[#stamps + 1], stamps[#stamps + 2], stamps[#stamps + 3] = KEYS[i + n], ends, label
  else
    lost[#lost + 1] = label
    if score then
      redis.call('ZREM', KEYS[1], label)
    end
  end
end
redis.call('DEL', KEYS[5])
local index, last = {}, nil
for i = 1, #stamps, 3 do
  if #lost == 0 then
    redis.call('SET', stamps[i], order, 'PXAT', stamps[i + 1])
    index[#index + 1], index[#index + 2] = stamps[i + 2], order
    last = math.max(last or stamps[i + 1], stamps[i + 1])
  else
    redis.call('DEL', stamps[i])
  end
end
if last then
  redis.call('HSET', KEYS[5], unpack(index))
  redis.call('PEXPIREAT', KEYS[5], last)
end
if #lost == 0 then
  local ends = redis.call('PEXPIRETIME', KEYS[3])
  if ends >= 0 and ends < exp then
    redis.call('PEXPIREAT', KEYS[3], exp)
    redis.call('ZADD', KEYS[4], 'XX', exp, acct)
  end
end
if #scored > 0 then
  redis.call('ZADD', KEYS[1], unpack(scored))
  redis.call('ZADD', KEYS[2], unpack(scored))
end
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if top[2] then
  redis.call('PEXPIREAT', KEYS[1], top[2])
end
return lost
