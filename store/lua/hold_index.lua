-- Functions of the scripts that give seats back to best available's index
-- (hold_unsold.lua, hold_block_done.lua, and the releases: hold_release.lua,
-- hold_leave.lua, hold_release_order.lua), which store.Holds puts before
-- each of them. The index (store.Holds.bestIndexKey) is a zset per grade
-- and quantity q of the runs that may still have q seats side by side that
-- are neither sold, nor blocked, nor held (member: the run's first label;
-- score: its rank, best first), and a sentinel member '' whose score, -1 -
-- the event's index generation, says it was built whole
-- (hold_best_index.lua). Runs that only holds keep from giving q wait in a
-- second zset per grade and q (store.Holds.bestParkedKey) until the first
-- of those holds ends (hold_best.lua); a release puts its seat's run back
-- at once.

-- index_runs puts runs back into the index after seats became free again:
-- ARGV[at] is '1' when the caller did not know their runs, and then the
-- generation (gen_key) rises, so that every zset of the event is built
-- again before use; otherwise ARGV[at + 1..] are triples: the position in
-- KEYS of a zset, a run's rank and its first label.
local function index_runs(gen_key, at)
  if ARGV[at] == '1' then
    redis.call('INCR', gen_key)
    return
  end
  for i = at + 1, #ARGV, 3 do
    redis.call('ZADD', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
  end
end
