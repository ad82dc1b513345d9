-- Ends a change of an event's blocked seats that hold_block.lua started,
-- after its PostgreSQL transaction: with ARGV[2] '1' (an unblock that
-- committed, or a block that did not) the seats leave blocked:{e} and the
-- blocks under way, KEYS[4] rises, so that a load of the copy that read
-- PostgreSQL before the commit writes nothing (hold_cache.lua), and their
-- runs are back in best available's index (index_runs, from
-- hold_index.lua); then the block lock is released if it is still the
-- change's own.
-- KEYS[1] blocks:lock:{e}, KEYS[2] blocked:{e}, KEYS[3] blocking:{e},
-- KEYS[4] unblocks:{e}, KEYS[5] best:gen:{e}, KEYS[6..] zsets of the index
-- ARGV[1] the change's token, ARGV[2] '1' to take the seats out, ARGV[3]
-- number of labels n, ARGV[4..3+n] the labels, then index_runs' arguments
-- (with ARGV[2] '1').
if ARGV[2] == '1' then
  local n = tonumber(ARGV[3])
  redis.call('INCR', KEYS[4])
  for i = 4, 3 + n do
    redis.call('SREM', KEYS[2], ARGV[i])
    redis.call('ZREM', KEYS[3], ARGV[i])
  end
  index_runs(KEYS[5], 4 + n)
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 1
