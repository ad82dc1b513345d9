-- Read an account's entry token for one event (store.Queue.EntryToken).
-- Read-only.
--
-- KEYS[1] entry:{e}:<account>, KEYS[2] entry:live:{e}
-- ARGV[1] the account
--
-- Returns {"<token>|<session key>", PTTL in ms} while the token lives;
-- otherwise {false, the account's score in entry:live:{e}} if a token was
-- issued, or {} if none ever was.
local v = redis.call('GET', KEYS[1])
if v then
  return {v, redis.call('PTTL', KEYS[1])}
end
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if score then
  return {false, tonumber(score)}
end
return {}
