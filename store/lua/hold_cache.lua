-- Loads sold:{e}, bought:{e} and blocked:{e} from PostgreSQL's rows and sets the markers,
-- unless the freshness marker is there. It only adds sold seats and raises
-- bought counts, so a sale recorded (MarkSold) between the PostgreSQL read and
-- this script is never lost, and concurrent loads are harmless.
--
-- The load set KEYS[4] before it read PostgreSQL. If that key is gone, Redis
-- lost its data since (FLUSHALL, a restart without persistence), and with it
-- maybe a sale that committed after the read and was marked sold before the
-- loss: the rows would miss that seat, so nothing is written and the caller
-- reads again. The check and the write are one script: no loss falls
-- between them.
--
-- The freshness marker KEYS[1] expires, so that the copy is merged with
-- PostgreSQL's again; the completeness marker KEYS[5] does not: it says that
-- the copy was loaded whole once and kept since (MarkSold), and it goes only
-- when Redis loses its data, with the copy. Its value, the name of the load
-- that first set it, changes only then: SeatStatuses' shared reads of the
-- sold seats compare it, to drop a read from before a loss. Both are set
-- here, in the script
-- that writes the data, so that neither ever stands for a copy that is not
-- there.
--
-- A claim made more than ARGV[2] ms ago (a load's timeout plus the longest a
-- confirmation may take to commit after its claim) belongs to a sale that
-- committed, if at all, before this load set KEYS[4] and read PostgreSQL:
-- the copy has it, and its record in KEYS[6] goes.
--
-- A refund (hold_unsold.lua) takes seats out of the copy and raises KEYS[7];
-- the load read KEYS[7] (ARGV[4]) before it read PostgreSQL, and if it
-- changed since, the rows may still count a refunded seat as sold: nothing
-- is written and the caller reads again.
--
-- Blocked seats are replaced, not merged: blocked:{e} becomes PostgreSQL's
-- blocked_seat rows plus the seats of blocks under way (KEYS[9], recorded
-- by hold_block.lua before their transaction, younger than the claim age:
-- a block commits within that time, so an older one committed before this
-- load's read, or never will). An unblock (or a block that PostgreSQL
-- refused) takes its seats out of blocked:{e} and KEYS[9] and raises
-- KEYS[10] after its transaction: like a refund, a change of KEYS[10]
-- since the load read it (ARGV[5]) means nothing is written.
--
-- Best available's index (hold_index.lua) lists every run that a seat
-- not sold nor blocked may leave free. A seat this load takes out of
-- blocked:{e} may be in a run the index dropped, and a copy loaded whole
-- for the first time (cache:complete:{e} was not there: Redis lost its
-- data, or never had it) may sit beside an index from before: either way
-- the index's generation KEYS[11] rises, so that it is built whole again
-- before use.
--
-- KEYS[1] cache:ready:{e}, KEYS[2] sold:{e}, KEYS[3] bought:{e},
-- KEYS[4] cache:loading:{e}:<load id>, KEYS[5] cache:complete:{e},
-- KEYS[6] claimed:{e}, KEYS[7] refunds:{e}, KEYS[8] blocked:{e},
-- KEYS[9] blocking:{e}, KEYS[10] unblocks:{e}, KEYS[11] best:gen:{e}
-- ARGV[1] marker TTL (ms), ARGV[2] claim age (ms), ARGV[3] number of sold
-- labels n, ARGV[4] KEYS[7] as the load read it ('' when missing), ARGV[5]
-- KEYS[10] as the load read it ('' when missing), ARGV[6] number of
-- blocked labels b, ARGV[7..6+n] sold labels, ARGV[7+n..6+n+b] blocked
-- labels, then account id, tickets pairs.
-- Returns 1 when it loaded, 0 when KEYS[1] was there, -1 when KEYS[4]
-- was gone or KEYS[7] or KEYS[10] changed (nothing written).
local fresh = redis.call('DEL', KEYS[4]) == 1
fresh = fresh and (redis.call('GET', KEYS[7]) or '') == ARGV[4]
fresh = fresh and (redis.call('GET', KEYS[10]) or '') == ARGV[5]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
if not fresh then
  return -1
end

-- sadd adds ARGV[from..to] to the set at key, a thousand at a time.
local function sadd(key, from, to)
  local i = from
  while i <= to do
    local j = math.min(i + 999, to)
    redis.call('SADD', key, unpack(ARGV, i, j))
    i = j + 1
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = 6 + tonumber(ARGV[3])
sadd(KEYS[2], 7, last)
local was_blocked = redis.call('SMEMBERS', KEYS[8])
redis.call('DEL', KEYS[8])
redis.call('ZREMRANGEBYSCORE', KEYS[9], '-inf', '(' .. (now - tonumber(ARGV[2])))
for _, label in ipairs(redis.call('ZRANGE', KEYS[9], 0, -1)) do
  redis.call('SADD', KEYS[8], label)
end
sadd(KEYS[8], last + 1, last + tonumber(ARGV[6]))
last = last + tonumber(ARGV[6])
for k = last + 1, #ARGV, 2 do
  if tonumber(ARGV[k + 1]) > tonumber(redis.call('HGET', KEYS[3], ARGV[k]) or '0') then
    redis.call('HSET', KEYS[3], ARGV[k], ARGV[k + 1])
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', '(' .. (now - tonumber(ARGV[2])))
local reindex = redis.call('SET', KEYS[5], KEYS[4], 'NX')
for _, label in ipairs(was_blocked) do
  if reindex or redis.call('SISMEMBER', KEYS[8], label) == 0 then
    reindex = true
    break
  end
end
if reindex then
  redis.call('INCR', KEYS[11])
end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return 1
