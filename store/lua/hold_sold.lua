-- Records a committed sale: the seats are sold, the account's bought count
-- rises to the committed total, and any hold or claim on those seats ends.
-- KEYS[1] sold:{e}, KEYS[2] bought:{e}, KEYS[3] hold:{e}:{acct},
-- KEYS[4] held:{e}, KEYS[5] holder:{e}, KEYS[6] claimed:{e},
-- KEYS[7..] seat:lock:{e}:<label>
-- ARGV[1] account id, ARGV[2] tickets bought in all, ARGV[3..] labels.
-- bought only grows, so that sales recorded out of order keep the larger.
for i = 7, #KEYS do
  local label = ARGV[i - 4]
  redis.call('SADD', KEYS[1], label)
  redis.call('DEL', KEYS[i])
  redis.call('ZREM', KEYS[3], label)
  redis.call('ZREM', KEYS[4], label)
  redis.call('HDEL', KEYS[5], label)
  redis.call('ZREM', KEYS[6], label)
end
if tonumber(ARGV[2]) > tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return 1
