--[[
  pruneJobs: removes jobs of a rewound queue that PostgreSQL knows, so the
  restore that follows brings each back in the state PostgreSQL holds
  (src/restore/loss-watch.ts). Only while the queue is reset (no epoch
  marker): a queue restored meanwhile is left alone.

  KEYS[1] waiting  KEYS[2] delayed  KEYS[3] active  KEYS[4] failed  KEYS[5] epoch marker
  ARGV[1] key prefix, then job ids

  Returns the number of job hashes removed, or -1 when the marker exists.
  Guarantee: each id leaves the four sets and its hash is deleted; nothing
  else is touched (events stay: PostgreSQL has them).
]]
@include "job"

if redis.call('EXISTS', KEYS[5]) == 1 then return -1 end
local n = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  for k = 1, 4 do redis.call('ZREM', KEYS[k], id) end
  n = n + redis.call('DEL', jobKey(ARGV[1], id))
end
return n
