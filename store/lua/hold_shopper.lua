-- Functions of the scripts that act for a shopper (hold.lua,
-- hold_release.lua), which store.Holds puts before each of them.

-- entry_refusal checks the shopper's entry (DESIGN rule 5): the account's
-- entry token (entry_key, "<token>|<session key>") must be live and bound to
-- session ('' for no check). Returns nil, or the reason for refusing:
-- 'expired' (a token was issued, entry:live:{e} at live_key says so),
-- 'none' or 'other_session'.
local function entry_refusal(entry_key, live_key, acct, session)
  if session == '' then
    return nil
  end
  local entry = redis.call('GET', entry_key)
  if not entry then
    if redis.call('ZSCORE', live_key, acct) then
      return 'expired'
    end
    return 'none'
  end
  local bar = string.find(entry, '|', 1, true)
  if not bar or string.sub(entry, bar + 1) ~= session then
    return 'other_session'
  end
  return nil
end

-- prune_holds drops from the account's holds (hold_key) those ended at now
-- and those of seats sold since (sold_key), so that its count follows
-- expiry and sales with no sweeper.
local function prune_holds(hold_key, sold_key, now)
  redis.call('ZREMRANGEBYSCORE', hold_key, '-inf', '(' .. now)
  for _, label in ipairs(redis.call('ZRANGE', hold_key, 0, -1)) do
    if redis.call('SISMEMBER', sold_key, label) == 1 then
      redis.call('ZREM', hold_key, label)
    end
  end
end
