-- Ends one account's hold on one seat: a compare-and-delete, so that an
-- account can never end another account's hold; with the entry token
-- checked first (DESIGN rule 5).
-- KEYS[1] seat:lock:{e}:<label>, KEYS[2] hold:{e}:{acct}, KEYS[3] held:{e},
-- KEYS[4] holder:{e}, KEYS[5] entry:{e}:{acct}, KEYS[6] entry:live:{e},
-- KEYS[7] sold:{e}, KEYS[8] bought:{e}; ARGV[1] account id, ARGV[2] label,
-- ARGV[3] the session key the entry token must be bound to ('' for no
-- check).
-- Returns {'no_entry', reason} (as hold.lua), or {outcome, now (ms), owned,
-- {label, expiry, ...} of the account's live holds after the call}, outcome
-- 'released' when the hold was the account's and ended, 'not_held'
-- otherwise (then only a stale entry of the account's own zset may go).
-- entry_refusal and prune_holds come from hold_shopper.lua.
local refusal = entry_refusal(KEYS[5], KEYS[6], ARGV[1], ARGV[3])
if refusal then
  return {'no_entry', refusal}
end
local outcome = 'not_held'
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[3], ARGV[2])
  redis.call('HDEL', KEYS[4], ARGV[2])
  outcome = 'released'
end
redis.call('ZREM', KEYS[2], ARGV[2])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
prune_holds(KEYS[2], KEYS[7], now)
return {outcome, now, tonumber(redis.call('HGET', KEYS[8], ARGV[1]) or '0'), redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')}
