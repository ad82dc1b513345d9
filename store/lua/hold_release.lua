-- Ends one account's hold on one seat: a compare-and-delete, so that an
-- account can never end another account's hold.
-- KEYS[1] seat:lock:{e}:<label>, KEYS[2] hold:{e}:{acct}, KEYS[3] held:{e},
-- KEYS[4] holder:{e}; ARGV[1] account id, ARGV[2] label.
-- Returns 1 when the hold was the account's and ended, 0 otherwise (then only
-- a stale entry of the account's own zset may go).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[2])
  redis.call('HDEL', KEYS[4], ARGV[2])
  return 1
end
redis.call('ZREM', KEYS[2], ARGV[2])
return 0
