-- Ends a shopper's turn (store.Holds.Leave) with the entry token checked
-- first (DESIGN rule 5): every hold of the account ends (a compare-and-
-- delete per seat, so another account's hold is never touched), and the
-- entry token ends, freeing the place among the shoppers for the next
-- admission (entry:live:{e} keeps the account with the score 1, so that a
-- turn the fan left can be told from one that ran out). The caller lists
-- the account's held seats as it read them; if the account holds a seat
-- that is not listed (a hold that came in since), nothing changes and the
-- caller reads again. While a listed seat is in the account's order awaiting
-- payment (its seat:order key names the order and expires with the very
-- hold it describes, as hold_release.lua checks), nothing changes either:
-- the turn goes on until the order is paid or ends.
-- KEYS[1] hold:{e}:{acct}, KEYS[2] held:{e}, KEYS[3] holder:{e},
-- KEYS[4] entry:{e}:{acct}, KEYS[5] entry:live:{e},
-- KEYS[6..5+n] seat:lock:{e}:<label> of the n listed seats,
-- KEYS[6+n..5+2n] their seat:order:{e}:<label>, KEYS[6+2n] best:gen:{e},
-- then zsets of best available's index
-- ARGV[1] account id, ARGV[2] the session key the entry token must be bound
-- to, ARGV[3] n, ARGV[4..3+n] the listed labels, then index_runs' arguments
-- for their runs (which are back in the index: a pick may have parked them
-- for the holds).
-- Returns {'no_entry', reason} (as hold.lua), {'retry'},
-- {'order_pending', order id} or {'left', n}, n the holds ended.
-- entry_refusal comes from hold_shopper.lua, index_runs from hold_index.lua.
local refusal = entry_refusal(KEYS[4], KEYS[5], ARGV[1], ARGV[2])
if refusal then
  return {'no_entry', refusal}
end
local n = tonumber(ARGV[3])
local listed = {}
for i = 4, 3 + n do
  listed[ARGV[i]] = true
end
for _, label in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if not listed[label] then
    return {'retry'}
  end
end
for i = 6, 5 + n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    local order = redis.call('GET', KEYS[i + n])
    if order and redis.call('PEXPIRETIME', KEYS[i + n]) == redis.call('PEXPIRETIME', KEYS[i]) then
      return {'order_pending', order}
    end
  end
end
local ended = 0
for i = 6, 5 + n do
  local label = ARGV[i - 2]
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[2], label)
    redis.call('HDEL', KEYS[3], label)
    ended = ended + 1
  end
end
if ended > 0 then
  index_runs(KEYS[6 + 2 * n], 4 + n)
end
redis.call('DEL', KEYS[1], KEYS[4])
redis.call('ZADD', KEYS[5], 'XX', 1, ARGV[1])
return {'left', ended}
