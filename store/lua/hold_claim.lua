-- Claims seats for the buyer of an order being confirmed: all of them or
-- none (Holds.claimSeats says why it lasts as long as it does).
-- KEYS[1] hold:{e}:{acct}   zset label -> expiry (ms): the buyer's holds
-- KEYS[2] held:{e}          zset label -> expiry (ms): index of held seats
-- KEYS[3] holder:{e}        hash label -> account: index of holders
-- KEYS[4] claimed:{e}       zset label -> claim time (ms): seats claimed
--                           for a sale that sold:{e} may not have yet
-- KEYS[5] order:holds:{e}:<order>  the order's marker (hold_release_order.lua)
-- KEYS[6] blocked:{e}       set of labels an admin blocked
-- KEYS[7] sold:{e}          set of sold labels
-- KEYS[8..7+n] seat:lock:{e}:<label>, KEYS[8+n..7+2n] seat:order:{e}:<label>,
-- one of each per seat, in ARGV's order
-- ARGV[1] account id, ARGV[2] TTL (ms), ARGV[3] the marker's TTL (ms),
-- ARGV[4..] labels
-- Returns {'taken', {labels}} when another account holds any of the seats,
-- an admin blocked it (a late payment for an order whose seats were
-- blocked after it expired) or it is sold already, changing nothing;
-- otherwise {'ok', {labels}}, the seats that no hold of
-- the buyer covered (those the claim took). A claimed seat is a hold of the
-- buyer, written as hold.lua writes one, ending at now + TTL on Redis's
-- clock or later if the buyer's hold on it already ended later, and is
-- recorded in KEYS[4] at now, where MarkSold or a later load ends it. The
-- order's marker is set, so that its expiry, if it reads the order as due
-- now, releases nothing: the claim is the confirmation's to end. A seat
-- whose hold was in an order awaiting payment (its seat:order key expiring
-- with the hold: hold_extend.lua) stays so with the claim's expiry, so that
-- the buyer cannot release a seat being paid for (hold_release.lua).
-- A seat in sold:{e} is taken whoever bought it: MarkSold (hold_sold.lua)
-- ended its hold keys when it added it there, and a claim must not write
-- one again. A repeat of a confirmation that read the order before it was
-- paid claims after the sale was marked; its transaction finds the payment
-- recorded and does not look at what the claim found.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local acct, exp = ARGV[1], now + tonumber(ARGV[2])
local n = (#KEYS - 7) / 2

local taken, fresh = {}, {}
for i = 8, 7 + n do
  local label = ARGV[i - 4]
  local owner = redis.call('GET', KEYS[i])
  if (owner ~= false and owner ~= acct) or redis.call('SISMEMBER', KEYS[6], label) == 1
      or redis.call('SISMEMBER', KEYS[7], label) == 1 then
    taken[#taken + 1] = label
  elseif owner == false then
    fresh[#fresh + 1] = label
  end
end
if #taken > 0 then
  return {'taken', taken}
end

-- A seat the buyer holds already past the claim's end (the checkout
-- extended its hold to the order's expiry) keeps its hold as it is: its
-- lock, the buyer's zset and the indexes agree (every hold script writes
-- them together), so only the claim's record is written. Every other seat
-- becomes the buyer's hold until the claim's end, or its own if later; the
-- writes of all seats go out as one command per key.
local scored, owners, claims = {}, {}, {}
for i = 8, 7 + n do
  local label = ARGV[i - 4]
  -- PEXPIRETIME is -2 without the key: the claim's own expiry wins.
  local ends = redis.call('PEXPIRETIME', KEYS[i])
  if ends < exp or tonumber(redis.call('ZSCORE', KEYS[1], label)) ~= ends then
    local stamped = ends > 0 and redis.call('PEXPIRETIME', KEYS[i + n]) == ends
    ends = math.max(exp, ends)
    redis.call('SET', KEYS[i], acct, 'PXAT', ends)
    if stamped then
      redis.call('PEXPIREAT', KEYS[i + n], ends)
    end
    scored[#scored + 1], scored[#scored + 2] = ends, label
    owners[#owners + 1], owners[#owners + 2] = label, acct
  end
  claims[#claims + 1], claims[#claims + 2] = now, label
end
if #scored > 0 then
  redis.call('ZADD', KEYS[1], unpack(scored))
  redis.call('ZADD', KEYS[2], unpack(scored))
  redis.call('HSET', KEYS[3], unpack(owners))
  redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
end
redis.call('ZADD', KEYS[4], unpack(claims))
redis.call('SET', KEYS[5], 'claimed', 'PX', ARGV[3])
return {'ok', fresh}
