-- Builds best available's index (see hold_index.lua) of one grade for the
-- quantities 1 to q, those of its zsets that are not built for the event's
-- index generation: each gets every run of the grade at least as long as
-- its quantity (runs already there stay; the scripts that read it drop the
-- runs that cannot give the quantity, or park them while held) and the
-- sentinel, and its zset of parked runs is emptied but for the sentinel.
-- Every run is in, so no free seat is left out, whatever the index missed
-- before.
-- KEYS[1] best:gen:{e}, KEYS[2..1+2q] for each quantity 1..q, the grade's
-- zset and its zset of parked runs
-- ARGV: triples of a run's rank, length and first label, best first.
-- Returns the number of quantities built.
local sentinel = -1 - tonumber(redis.call('GET', KEYS[1]) or '0')
local built = 0
for q = 1, (#KEYS - 1) / 2 do
  local key, parked = KEYS[2 * q], KEYS[2 * q + 1]
  if tonumber(redis.call('ZSCORE', key, '')) ~= sentinel or tonumber(redis.call('ZSCORE', parked, '')) ~= sentinel then
    local batch = {}
    for i = 1, #ARGV, 3 do
      if tonumber(ARGV[i + 1]) >= q then
        batch[#batch + 1] = ARGV[i]
        batch[#batch + 1] = ARGV[i + 2]
        if #batch >= 1000 then
          redis.call('ZADD', key, unpack(batch))
          batch = {}
        end
      end
    end
    if #batch > 0 then
      redis.call('ZADD', key, unpack(batch))
    end
    redis.call('ZADD', key, sentinel, '')
    redis.call('DEL', parked)
    redis.call('ZADD', parked, sentinel, '')
    built = built + 1
  end
end
return built
