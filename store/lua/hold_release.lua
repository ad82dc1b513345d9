-- Ends one account's hold on one seat: a compare-and-delete, so that an
-- account can never end another account's hold; with the entry token
-- checked first (DESIGN rule 5). A seat of the account's order awaiting
-- payment stays held: its seat:order key names the order and expires with
-- the very hold it describes (hold_extend.lua; hold_claim.lua keeps it with
-- the claim), until the order's expiry (hold_release_order.lua), its
-- confirmation or its end (hold_order_end.lua) ends it or a newer order's
-- checkout names that order instead.
-- KEYS[1] seat:lock:{e}:<label>, KEYS[2] hold:{e}:{acct}, KEYS[3] held:{e},
-- KEYS[4] holder:{e}, KEYS[5] entry:{e}:{acct}, KEYS[6] entry:live:{e},
-- KEYS[7] sold:{e}, KEYS[8] bought:{e}, KEYS[9] seat:order:{e}:<label>,
-- KEYS[10] best:gen:{e}, KEYS[11..] zsets of best available's index, and
-- last hold:order:{e}:{acct} as hold.lua's;
-- ARGV[1] account id, ARGV[2] label, ARGV[3] the session key the entry
-- token must be bound to ('' for no check), ARGV[4..] index_runs'
-- arguments for the seat's run.
-- Returns {'no_entry', reason} (as hold.lua), or {outcome, now (ms), owned,
-- {label, expiry, ...} of the account's live holds after the call, order},
-- outcome 'released' when the hold was the account's and ended, 'in_order'
-- when it is the account's but in its order awaiting payment (order: that
-- order's id; nothing changed), 'not_held' otherwise (then only a stale
-- entry of the account's own zset may go). A released seat's run is back in
-- best available's index (a pick may have parked it for the hold).
-- entry_refusal, prune_holds and holds_reply come from hold_shopper.lua,
-- index_runs from hold_index.lua.
local refusal = entry_refusal(KEYS[5], KEYS[6], ARGV[1], ARGV[3])
if refusal then
  return {'no_entry', refusal}
end
local outcome, order = 'not_held', ''
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local stamp = redis.call('GET', KEYS[9])
  if stamp and redis.call('PEXPIRETIME', KEYS[9]) == redis.call('PEXPIRETIME', KEYS[1]) then
    outcome, order = 'in_order', stamp
  else
    redis.call('DEL', KEYS[1])
    redis.call('ZREM', KEYS[3], ARGV[2])
    redis.call('HDEL', KEYS[4], ARGV[2])
    index_runs(KEYS[10], 4)
    outcome = 'released'
  end
end
if outcome ~= 'in_order' then
  redis.call('ZREM', KEYS[2], ARGV[2])
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local _, live = prune_holds(KEYS[2], KEYS[7], now)
return {outcome, now, tonumber(redis.call('HGET', KEYS[8], ARGV[1]) or '0'), (holds_reply(KEYS[#KEYS], live)), order}
