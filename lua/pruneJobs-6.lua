--[[
  pruneJobs: removes jobs of a reset queue that PostgreSQL knows, so the
  restore that follows brings each back in the state PostgreSQL holds
  (src/restore/restore.ts, after lua/resetQueue-3.lua). Fenced like
  restoreJobs: only by the holder of the queue's mirror lock, and only while
  the queue has no epoch marker.

  KEYS[1] waiting  KEYS[2] delayed  KEYS[3] active  KEYS[4] failed
  KEYS[5] epoch marker  KEYS[6] the queue's mirror lock
  ARGV[1] key prefix  ARGV[2] lock token  ARGV[3] lock lease ms (renewed)
  then job ids

  Returns the number of job hashes removed, or -1 (nothing written) when the
  lock is not ARGV[2] or the marker exists.
  Guarantee: each id leaves the four sets and the blocked set
  (<prefix>blocked, flow jobs) and its hash is deleted; nothing
  else is touched (events stay: PostgreSQL has them).
]]
@include "clamp"
@include "job"
@include "lanes"

if redis.call('GET', KEYS[6]) ~= ARGV[2] or redis.call('EXISTS', KEYS[5]) == 1 then return -1 end
redis.call('PEXPIRE', KEYS[6], clamp(ARGV[3], 1, MAX_LEASE_MS, 30000))
local n = 0
for i = 4, #ARGV do
  local id = ARGV[i]
  local jk = jobKey(ARGV[1], id)
  local f = redis.pcall('HMGET', jk, 's', 'ck')
  local ck = type(f) == 'table' and f[2] or nil
  if ck == false then ck = nil end
  laneRemove(ARGV[1], id, ck, redis.call('ZREM', KEYS[1], id) == 1)
  if redis.call('ZREM', KEYS[3], id) == 1 then slotFree(ARGV[1], ck) end
  for k = 1, 4 do redis.call('ZREM', KEYS[k], id) end
  -- A flow job's blocked set, in the queue's slot (as lua/enqueueJobs-5.lua names it).
  redis.call('ZREM', ARGV[1] .. 'blocked', id)
  n = n + redis.call('DEL', jobKey(ARGV[1], id))
end
return n
