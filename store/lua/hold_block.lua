-- Starts a change of an event's blocked seats (store.Blocks), before its
-- PostgreSQL transaction: it takes the event's block lock KEYS[1] (one
-- change at a time, so that an unblock never removes from Redis a seat a
-- block is committing, nor a refused block one that another block of the
-- same seat commits), and, for a block, refuses if any of the seats is held
-- (its lock key is there: a hold, a hold extended for an unpaid order, or a
-- confirmation's claim); otherwise the seats join blocked:{e} at once, so
-- that from this script on no hold or claim can take them, and are recorded
-- in KEYS[3] as a block under way, so that a load of the copy that reads
-- PostgreSQL before the transaction commits keeps them (hold_cache.lua).
-- KEYS[1] blocks:lock:{e}, KEYS[2] blocked:{e}, KEYS[3] blocking:{e},
-- KEYS[4..] seat:lock:{e}:<label>, one per seat of a block (none for an
-- unblock)
-- ARGV[1] the change's token, ARGV[2] the lock's TTL (ms), ARGV[3] 'block'
-- or 'unblock', ARGV[4..] the labels, in KEYS' order
-- Returns {'busy'} while another change holds the lock; {'held', {labels}}
-- (nothing changed); or {'ok'}, the lock taken.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'busy'}
end
if ARGV[3] == 'block' then
  local held = {}
  for i = 4, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then
      held[#held + 1] = ARGV[i]
    end
  end
  if #held > 0 then
    return {'held', held}
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  for i = 4, #ARGV do
    redis.call('SADD', KEYS[2], ARGV[i])
    redis.call('ZADD', KEYS[3], now, ARGV[i])
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {'ok'}
