-- Functions of the scripts that act for a shopper (hold.lua, hold_best.lua,
-- hold_release.lua, hold_leave.lua), which store.Holds puts before each of
-- them.

-- entry_refusal checks the shopper's entry (DESIGN rule 5): the account's
-- entry token (entry_key, "<token>|<session key>") must be live and bound to
-- session ('' for no check). Returns nil, or the reason for refusing:
-- 'expired' (a token was issued, entry:live:{e} at live_key says so, and
-- its score is when it ran out), 'done' (score 0: it ended with the fan's
-- confirmed order, hold_sold.lua), 'left' (score 1: the fan left the sale
-- or logged out, hold_leave.lua), 'none' or 'other_session'.
local function entry_refusal(entry_key, live_key, acct, session)
  if session == '' then
    return nil
  end
  local entry = redis.call('GET', entry_key)
  if not entry then
    local ended = redis.call('ZSCORE', live_key, acct)
    if ended == '0' then
      return 'done'
    elseif ended == '1' then
      return 'left'
    elseif ended then
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
-- expiry and sales with no sweeper. Returns the number of holds left and
-- them, a table label -> expiry (ms). It reads the holds once (at most the
-- limit's, most often none), removes the ended ones only when there are
-- some, and checks the rest against sold_key with one SMISMEMBER.
local function prune_holds(hold_key, sold_key, now)
  local holds = redis.call('ZRANGE', hold_key, 0, -1, 'WITHSCORES')
  local labels, live = {}, {}
  for i = 1, #holds, 2 do
    if tonumber(holds[i + 1]) >= now then
      labels[#labels + 1] = holds[i]
      live[holds[i]] = tonumber(holds[i + 1])
    end
  end
  if #labels < #holds / 2 then
    redis.call('ZREMRANGEBYSCORE', hold_key, '-inf', '(' .. now)
  end
  if #labels == 0 then
    return 0, live
  end
  local left = #labels
  for i, sold in ipairs(redis.call('SMISMEMBER', sold_key, unpack(labels))) do
    if sold == 1 then
      redis.call('ZREM', hold_key, labels[i])
      live[labels[i]] = nil
      left = left - 1
    end
  end
  return left, live
end

-- holds_reply is the account's holds after a call, as a reply's flat list
-- {label, expiry, order, ...}: live (prune_holds' table) and the seats
-- labels just held until exp (none: nil); and their latest expiry (nil when
-- none). order is the id of the account's order awaiting payment that the
-- live hold is in, as hold:order:{e}:{acct} (orders_key, hold_extend.lua)
-- says, or '' (read only when some hold was live already: a seat just held
-- is in no order).
local function holds_reply(orders_key, live, labels, exp)
  local flat, last, orders = {}, nil, {}
  if next(live) then
    local pairs_read = redis.call('HGETALL', orders_key)
    for i = 1, #pairs_read, 2 do
      orders[pairs_read[i]] = pairs_read[i + 1]
    end
  end
  for label, e in pairs(live) do
    flat[#flat + 1] = label
    flat[#flat + 1] = e
    flat[#flat + 1] = orders[label] or ''
    last = math.max(last or e, e)
  end
  for _, label in ipairs(labels or {}) do
    if not live[label] then
      flat[#flat + 1] = label
      flat[#flat + 1] = exp
      flat[#flat + 1] = ''
      last = math.max(last or exp, exp)
    end
  end
  return flat, last
end

-- seat_states says, for each seat labels[i] (lock key lock_keys[i]), what
-- holding it would be for the account acct (its live holds: prune_holds'
-- table), with three commands whatever the number of seats (a fourth per
-- seat only on a copy past its TTL): 'gone' when it is sold (sold_key) or
-- blocked by an admin (blocked_key); 'held' when another account holds it;
-- 'mine' when the account holds it already; 'claimed' when, on a copy past
-- its TTL (stale), it is recorded as claimed for a sale (claimed_key);
-- 'new' when it is free to hold. A lock of the account's own that its live
-- holds do not list (a hold pruned as ended at the same millisecond) counts
-- as free. Also returns SMISMEMBER's reply for blocked_key.
local function seat_states(labels, lock_keys, sold_key, blocked_key, live, claimed_key, acct, stale)
  local sold = redis.call('SMISMEMBER', sold_key, unpack(labels))
  local blocked = redis.call('SMISMEMBER', blocked_key, unpack(labels))
  local owners = redis.call('MGET', unpack(lock_keys))
  local states = {}
  for i, label in ipairs(labels) do
    local owner = owners[i]
    if sold[i] == 1 or blocked[i] == 1 then
      states[i] = 'gone'
    elseif owner == false or (owner == acct and not live[label]) then
      if stale and redis.call('ZSCORE', claimed_key, label) then
        states[i] = 'claimed'
      else
        states[i] = 'new'
      end
    elseif owner == acct then
      states[i] = 'mine'
    else
      states[i] = 'held'
    end
  end
  return states, blocked
end

-- hold_seats holds the seats labels (lock keys lock_keys, in the same
-- order) for acct until exp (ms on Redis's clock): each seat's lock, and
-- with one command each, the account's holds (hold_key), set to expire with
-- the last of them (last, ms), and the map's indexes of held seats
-- (held_key) and holders (holder_key). The expiry goes to Redis as one
-- string made once: a Lua number argument is formatted by Redis with
-- printf's %.17g on every use, three times a seat.
local function hold_seats(labels, lock_keys, hold_key, held_key, holder_key, acct, exp, last)
  local at = string.format('%d', exp)
  local scored, owners = {}, {}
  for i, label in ipairs(labels) do
    redis.call('SET', lock_keys[i], acct, 'PXAT', at)
    scored[#scored + 1] = at
    scored[#scored + 1] = label
    owners[#owners + 1] = label
    owners[#owners + 1] = acct
  end
  redis.call('ZADD', hold_key, unpack(scored))
  redis.call('PEXPIREAT', hold_key, last)
  redis.call('ZADD', held_key, unpack(scored))
  redis.call('HSET', holder_key, unpack(owners))
end

-- trim_held keeps the map's index small after a hold: it drops a bounded
-- batch of holds ended before now from held_key and holder_key (one ZREM
-- and one HDEL for the batch).
local function trim_held(held_key, holder_key, now)
  local ended = redis.call('ZRANGEBYSCORE', held_key, '-inf', '(' .. now, 'LIMIT', 0, 100)
  if #ended > 0 then
    redis.call('ZREM', held_key, unpack(ended))
    redis.call('HDEL', holder_key, unpack(ended))
  end
end

-- hold_start is what hold.lua and hold_best.lua check before they pick
-- seats, with their common KEYS: the shopper's entry (KEYS[8], KEYS[9];
-- ARGV[1] the account, ARGV[5] the session) and a complete sold-seat copy
-- (KEYS[1]). Returns a reply that ends the script ({'no_entry', reason} or
-- {'rebuild'}), or nil and Redis's time in milliseconds.
local function hold_start()
  local refusal = entry_refusal(KEYS[8], KEYS[9], ARGV[1], ARGV[5])
  if refusal then
    return {'no_entry', refusal}
  end
  if redis.call('EXISTS', KEYS[1]) == 0 then
    return {'rebuild'}
  end
  local t = redis.call('TIME')
  return nil, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
