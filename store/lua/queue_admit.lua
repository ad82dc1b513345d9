-- Admit one part of a tick's batch of an event's waiting room
-- (store.Queue.Admit), atomically, so that no fan leaves the line without a
-- token and no tick admits more than its batch. A tick before the last one
-- admitted is refused, and so is the last one unless its last part was
-- full and left some of the batch (the stats field "part" = tick:admitted
-- so far, set only then): a tick cut short by the cap or by the end of the
-- line is over. A part admits at most what is left of the batch and the
-- fans whose keys were declared (Admit calls the script again for the rest,
-- so that Redis never runs one long script while every other command
-- waits), within the cap on live tokens (ZCOUNT of unexpired tokens); the
-- head (ZRANGE 0 n-1) must be the fans whose keys were declared. It records
-- the settings; for each fan at the head sets entry:{e}:{acct} =
-- token|session with PXAT expiry and records the expiry in entry:live:{e};
-- removes them from the line; advances the head and the admitted total, and
-- records the tick's count for the measured rate.
--
-- KEYS[1] queue:{e}        sorted set account -> sequence
-- KEYS[2] queue:sess:{e}   hash account -> session key
-- KEYS[3] queue:stats:{e}  hash of shared figures
-- KEYS[4] entry:live:{e}   sorted set account -> token expiry (Unix ms)
-- KEYS[5..] entry:{e}:<acct> of the fans at the head of the line as the
--          caller read it, in line order: every key the script writes is
--          declared. If the line's head is no longer those fans, the script
--          changes nothing and returns {-2, 0, 0}, and the caller reads the
--          head again.
-- ARGV[1]  tick index
-- ARGV[2]  the tick's batch size from the rate (before the cap), of which
--          this part admits what earlier parts of the tick did not
-- ARGV[3]  cap on live entry tokens, 0 for none
-- ARGV[4]  token TTL in ms
-- ARGV[5]  entry key prefix: KEYS[4 + i] must be this followed by the i-th
--          fan's account id
-- ARGV[6]  paused "1"/"0"
-- ARGV[7]  sold out "1"/"0"
-- ARGV[8]  configured rate (fans per second)
-- ARGV[9]  tick length in ms
-- ARGV[10] stats field that records this tick (a ring of RateWindow fields)
-- ARGV[11..] tokens, one for each fan of this part
--
-- Returns {admitted count, or -1 if the tick is over (a later tick was
-- admitted, or this one's batch, or it was cut short), or -2 if the head is
-- not KEYS[5..]'s fans; waiting after, live tokens after, admitted account
-- ids in order...}.
local tick = tonumber(ARGV[1])
local batch = tonumber(ARGV[2])
local last = tonumber(redis.call('HGET', KEYS[3], 'tick'))
local before = 0
if last and tick < last then
  return {-1, 0, 0}
elseif last == tick then
  local open = redis.call('HGET', KEYS[3], 'part') or ''
  local otick, ocount = string.match(open, '^(%d+):(%d+)$')
  if otick ~= ARGV[1] then
    return {-1, 0, 0}
  end
  before = tonumber(ocount)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local live = redis.call('ZCOUNT', KEYS[4], now, '+inf')
local stopped = ARGV[6] == '1' or ARGV[7] == '1'
local picked = {}
-- a full part: every token sent, or the rest of the batch; fewer declared
-- fans than tokens means the line ended when the caller read its head
local full = math.min(batch - before, #ARGV - 10)
if not stopped then
  local n = math.min(full, #KEYS - 4)
  local cap = tonumber(ARGV[3])
  if cap > 0 then
    n = math.min(n, cap - live)
  end
  if n > 0 then
    picked = redis.call('ZRANGE', KEYS[1], 0, n - 1, 'WITHSCORES')
    for i = 1, #picked, 2 do
      if KEYS[4 + (i + 1) / 2] ~= ARGV[5] .. picked[i] then
        return {-2, 0, 0}
      end
    end
  end
end

redis.call('HSET', KEYS[3], 'tick', ARGV[1], 'rate', ARGV[8], 'tick_ms', ARGV[9],
  'paused', ARGV[6], 'sold_out', ARGV[7])
redis.call('HDEL', KEYS[3], 'part')
if stopped then
  return {0, redis.call('ZCARD', KEYS[1]), live}
end

local out = {0, 0, 0}
if #picked > 0 then
  local expires = now + tonumber(ARGV[4])
  local head
  for i = 1, #picked, 2 do
    local acct = picked[i]
    local sess = redis.call('HGET', KEYS[2], acct) or ''
    redis.call('SET', KEYS[4 + (i + 1) / 2], ARGV[10 + (i + 1) / 2] .. '|' .. sess, 'PXAT', expires)
    redis.call('ZADD', KEYS[4], expires, acct)
    redis.call('HDEL', KEYS[2], acct)
    out[#out + 1] = acct
    head = picked[i + 1]
  end
  local count = #picked / 2
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, count - 1)
  redis.call('HSET', KEYS[3], 'head', head)
  redis.call('HINCRBY', KEYS[3], 'admitted', count)
  out[1] = count
  live = live + count
end

local waiting = redis.call('ZCARD', KEYS[1])
local backlog = '0'
if waiting > 0 then
  backlog = '1'
end
redis.call('HSET', KEYS[3], ARGV[10], ARGV[1] .. ':' .. (before + out[1]) .. ':' .. backlog)
if out[1] == full and before + out[1] < batch then
  redis.call('HSET', KEYS[3], 'part', ARGV[1] .. ':' .. (before + out[1]))
end
out[2] = waiting
out[3] = live
return out
