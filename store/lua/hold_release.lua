-- Ends one account's hold on one seat: a compare-and-delete, so that an
-- account can never end another account's hold; with the entry token
-- checked first (DESIGN rule 5).
-- KEYS[1] seat:lock:{e}:<label>, KEYS[2] hold:{e}:{acct}, KEYS[3] held:{e},
-- KEYS[4] holder:{e}, KEYS[5] entry:{e}:{acct}, KEYS[6] entry:live:{e},
-- KEYS[7] sold:{e}, KEYS[8] bought:{e}, KEYS[9] best:gen:{e}, KEYS[10..]
-- zsets of best available's index; ARGV[1] account id, ARGV[2] label,
-- ARGV[3] the session key the entry token must be bound to ('' for no
-- check), ARGV[4..] index_runs' arguments for the seat's run.
-- Returns {'no_entry', reason} (as hold.lua), or {outcome, now (ms), owned,
-- {label, expiry, ...} of the account's live holds after the call}, outcome
-- 'released' when the hold was the account's and ended, 'not_held'
-- otherwise (then only a stale entry of the account's own zset may go). A
-- released seat's run is back in best available's index (a pick may have
-- parked it for the hold).
-- entry_refusal, prune_holds and holds_reply come from hold_shopper.lua,
-- index_runs from hold_index.lua.
local refusal = entry_refusal(KEYS[5], KEYS[6], ARGV[1], ARGV[3])
if refusal then
  return {'no_entry', refusal}
end
local outcome = 'not_held'
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[3], ARGV[2])
  redis.call('HDEL', KEYS[4], ARGV[2])
  index_runs(KEYS[9], 4)
  outcome = 'released'
end
redis.call('ZREM', KEYS[2], ARGV[2])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local _, live = prune_holds(KEYS[2], KEYS[7], now)
return {outcome, now, tonumber(redis.call('HGET', KEYS[8], ARGV[1]) or '0'), (holds_reply(live))}
