--[[
  forgetJobs: retention in Redis. Called by the audit writer once the events of
  finished jobs are committed to PostgreSQL, so Redis holds only live jobs.

  KEYS[1] done (sorted set of kept finished jobs, by finish time)   KEYS[2] meta
  ARGV[1] key prefix   ARGV[2] keep count (-1 = none kept)   ARGV[3] keep ms (-1 = none kept)
  ARGV[4..] job ids
  Returns the number of job hashes deleted.
  Guarantee: only jobs still 'completed' or 'cancelled' are deleted (a job
  retried meanwhile is live again and stays); with a keep policy, the newest
  finished jobs stay readable in Redis for that count / time. A flow job
  cancelled for a failed dependency expires with its flow's record instead.
]]
@include "now"
@include "job"

local prefix = ARGV[1]
local keepCount, keepMs = clamp(ARGV[2], -1, 1e15, -1), clamp(ARGV[3], -1, MAX_TIME_MS, -1)
local now = nowMs()
local deleted = 0
-- A flow job cancelled because a dependency failed stays as long as its
-- flow's record (FLOW_RECORD_KEEP_MS, src/redis/stores/flow-record.ts: 7
-- days): a DLQ retry of that dependency blocks it again
-- (lua/moveFlowJobs-7.lua 'reblock' needs its hash, and PERSISTs it).
local FLOW_KEEP_MS = 604800000
local function forget(id)
  local jk = jobKey(prefix, id)
  local f = redis.pcall('HMGET', jk, 's', 'fl', 'cx')
  local s = type(f) == 'table' and f[1] or nil
  if s == 'cancelled' and f[2] and f[3] == 'dependency_failed' then
    redis.call('PEXPIRE', jk, FLOW_KEEP_MS)
  elseif s == 'completed' or s == 'cancelled' then
    redis.call('DEL', jk)
    deleted = deleted + 1
  end
end
if keepCount < 0 and keepMs < 0 then
  for i = 4, #ARGV do forget(ARGV[i]) end
  return deleted
end
for i = 4, #ARGV do redis.call('ZADD', KEYS[1], now, ARGV[i]) end
local old = {}
if keepMs >= 0 then
  old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - keepMs, 'LIMIT', 0, 1000)
end
if keepCount >= 0 then
  local extra = redis.call('ZCARD', KEYS[1]) - keepCount
  if extra > 0 then
    local more = redis.call('ZRANGE', KEYS[1], 0, math.min(extra, 1000) - 1)
    for _, id in ipairs(more) do old[#old + 1] = id end
  end
end
for _, id in ipairs(old) do
  redis.call('ZREM', KEYS[1], id)
  forget(id)
end
return deleted
