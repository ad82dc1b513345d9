-- Read the positions of fans of one event (store.Queue.Positions) and the
-- event's shared figures, at one instant of Redis's clock. Read-only.
--
-- KEYS[1] queue:{e}, KEYS[2] entry:live:{e}, KEYS[3] queue:stats:{e},
-- KEYS[4] (only when one account is asked about) entry:{e}:{acct}
-- ARGV[1] the number of stats fields asked for, then the fields, then the
-- accounts
--
-- Returns {now (Unix ms), the fields' values joined by "|" ("" where unset;
-- no value holds a "|"), then per account its join sequence in queue:{e} (0
-- if not in line), then per account its score in entry:live:{e} (-1 if
-- none: 0 and 1 are the marks of a turn that ended with an order or that
-- the fan left); the live scores are read only when some account is not in
-- line, and are all -1 otherwise}, and with KEYS[4] one more: the session
-- key the account's live entry token is bound to ("" when the account is in
-- line or holds no live token).
local t = redis.call('TIME')
local nf = tonumber(ARGV[1])
local fields = redis.call('HMGET', KEYS[3], unpack(ARGV, 2, 1 + nf))
for i = 1, nf do
  if not fields[i] then
    fields[i] = ''
  end
end
local out = {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), table.concat(fields, '|')}

-- scores returns the scores of ARGV[from..to] in key, 0 for a missing
-- member, read in chunks that stay within Lua's stack for unpack.
-- none is the score of a missing member.
local function scores(key, from, to, none)
  local s = {}
  for i = from, to, 1000 do
    for _, v in ipairs(redis.call('ZMSCORE', key, unpack(ARGV, i, math.min(i + 999, to)))) do
      s[#s + 1] = tonumber(v) or none
    end
  end
  return s
end

local first, last = 2 + nf, #ARGV
local seqs = scores(KEYS[1], first, last, 0)
local missing = false
for _, seq in ipairs(seqs) do
  out[#out + 1] = seq
  if seq == 0 then
    missing = true
  end
end
local bound = ''
if missing then
  for _, live in ipairs(scores(KEYS[2], first, last, -1)) do
    out[#out + 1] = live
    if KEYS[4] and live >= out[1] then
      local v = redis.call('GET', KEYS[4])
      if v then
        bound = string.sub(v, (string.find(v, '|', 1, true) or #v) + 1)
      end
    end
  end
else
  for _ = first, last do
    out[#out + 1] = -1
  end
end
if KEYS[4] then
  out[#out + 1] = bound
end
return out
