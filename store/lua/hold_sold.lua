-- Records a committed sale: the seats are sold, the account's bought count
-- rises to the committed total, and any hold or claim on those seats ends.
-- Then, if the account holds no other live seat of the event, its entry
-- token ends: its place among the shoppers frees for the next admission
-- (entry:live:{e} keeps the account with the score 0, so that a turn that
-- ended with a purchase can be told from one that ran out, or "never").
-- KEYS[1] sold:{e}, KEYS[2] bought:{e}, KEYS[3] hold:{e}:{acct},
-- KEYS[4] held:{e}, KEYS[5] holder:{e}, KEYS[6] claimed:{e},
-- KEYS[7] entry:{e}:{acct}, KEYS[8] entry:live:{e},
-- KEYS[9..] seat:lock:{e}:<label>
-- ARGV[1] account id, ARGV[2] tickets bought in all, ARGV[3..] labels.
-- bought only grows, so that sales recorded out of order keep the larger.
-- One command per key for all the seats.
local labels, locks = {}, {}
for i = 9, #KEYS do
  labels[#labels + 1] = ARGV[i - 6]
  locks[#locks + 1] = KEYS[i]
end
if #labels > 0 then
  redis.call('SADD', KEYS[1], unpack(labels))
  redis.call('DEL', unpack(locks))
  redis.call('ZREM', KEYS[3], unpack(labels))
  redis.call('ZREM', KEYS[4], unpack(labels))
  redis.call('HDEL', KEYS[5], unpack(labels))
  redis.call('ZREM', KEYS[6], unpack(labels))
end
if tonumber(ARGV[2]) > tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZCOUNT', KEYS[3], now, '+inf') == 0 and redis.call('DEL', KEYS[7]) == 1 then
  redis.call('ZADD', KEYS[8], 'XX', 0, ARGV[1])
end
return 1
