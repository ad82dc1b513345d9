-- draw places an event's pre-queue in line (DESIGN rule 6), once: unless
-- queue:stats:{e} says "drawn", every entrant of prequeue:{e} (members
-- "<rank>:<ticket>:<account>", all of score 0, so in ascending byte order
-- of the rank, the hex HMAC-SHA256 of the ticket under the seed) gets the
-- next sequence (INCR) and a place, bound to the session of their last
-- pre-queue join; then "drawn" is set, in the same script, so that no join
-- gets a sequence between the entrants' and no second draw happens.
-- Functions of queue_join.lua and queue_draw_run.lua, put before each.
local function draw(queue, seq, sess, stats, pre, preacct, epoch)
  if redis.call('HGET', stats, 'drawn') == '1' then
    return
  end
  for _, m in ipairs(redis.call('ZRANGE', pre, 0, -1)) do
    local acct = string.sub(m, 99)
    local s = redis.call('INCR', seq)
    redis.call('ZADD', queue, 'NX', s, acct)
    local v = redis.call('HGET', preacct, acct) or ''
    local bar = string.find(v, '|', 1, true)
    if bar then
      redis.call('HSET', sess, acct, string.sub(v, bar + 1))
    end
  end
  redis.call('HSET', stats, 'drawn', '1')
  redis.call('HSETNX', stats, 'epoch', epoch)
end
