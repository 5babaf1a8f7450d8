--[[
  advanceFlow: applies one job's outcome to its flow's record (docs/workflows.md
  "Release"), in the flow's own slot. Idempotent: an outcome already applied
  changes nothing, and the answer is computed from the record, not from the
  call, so a repeat (the flow worker died after this step) answers the same.

  KEYS[1] the flow's meta hash
  ARGV[1] the flow's key base   ARGV[2] job id
  ARGV[3] outcome: 'c' completed | 'x' failed or cancelled | 'r' retried from
    the dead-letter queue (its 'x' is taken back)
  ARGV[4] ms the record is kept once every job has an outcome ('' = for good)
  Returns {release, cancel, reblock}, each a flat list of queue, job id:
  - release: dependents with nothing left to wait for and no outcome yet (the
    caller unblocks each in its queue; a job no longer blocked is left alone);
  - cancel: after 'x', its dependents with policy 'c' and no outcome yet
    (cancelled with reason dependency_failed; their own 'x' goes on down);
  - reblock: after 'r', its dependents with policy 'c' whose outcome is 'x'
    (blocked again if their queue cancelled them for a dependency; then the
    caller applies 'r' to each, and so on down the graph).
  Counters: 'c' takes one off each dependent's `left`; 'x' only off policy-'r'
  dependents (a 'c' job waits for completions); 'r' gives it back to policy-'r'
  dependents that have no outcome yet. Unknown flow or job: three empty lists.
  Guarantee: each outcome moves the counters once; O(dependents of the job):
  a job with one dependent (a 10,000-child fan-in) costs O(1).
]]
local base = ARGV[1]
local id, oc = ARGV[2], ARGV[3]
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', base .. 'q', id) == 0 then return {{}, {}, {}} end
local prev = redis.call('HGET', base .. 'out', id)
local list = redis.call('HGET', base .. 'dnts', id)
local dependents = {}
if list then for d in string.gmatch(list, '[^,]+') do dependents[#dependents + 1] = d end end
local function isRun(d) return redis.call('HGET', base .. 'pol', d) == 'r' end

if (oc == 'c' or oc == 'x') and not prev then
  redis.call('HSET', base .. 'out', id, oc)
  redis.call('HINCRBY', KEYS[1], oc == 'c' and 'nc' or 'nx', 1)
  for _, d in ipairs(dependents) do
    if oc == 'c' or isRun(d) then redis.call('HINCRBY', base .. 'left', d, -1) end
  end
elseif oc == 'r' and prev == 'x' then
  redis.call('HDEL', base .. 'out', id)
  redis.call('HINCRBY', KEYS[1], 'nx', -1)
  for _, d in ipairs(dependents) do
    if isRun(d) and not redis.call('HGET', base .. 'out', d) then redis.call('HINCRBY', base .. 'left', d, 1) end
  end
end

-- Every job has an outcome: the record expires after ARGV[4] ms (a retry
-- takes it back; GET /flows/:id reads the history once it is gone).
local ttl = tonumber(ARGV[4])
if ttl and ttl > 0 then
  local m = redis.call('HMGET', KEYS[1], 'n', 'nc', 'nx')
  local done = (tonumber(m[2]) or 0) + (tonumber(m[3]) or 0) >= (tonumber(m[1]) or 1)
  if done or oc == 'r' then
    for _, part in ipairs({'meta', 'q', 'deps', 'dnts', 'left', 'pol', 'out', 'refs'}) do
      if done then redis.call('PEXPIRE', base .. part, ttl) else redis.call('PERSIST', base .. part) end
    end
  end
end

local release, cancel, reblock = {}, {}, {}
local applied = redis.call('HGET', base .. 'out', id)
for _, d in ipairs(dependents) do
  local dq = redis.call('HGET', base .. 'q', d)
  local dout = redis.call('HGET', base .. 'out', d)
  local run = isRun(d)
  if oc == 'r' then
    if not run and dout == 'x' and not applied then
      reblock[#reblock + 1] = dq; reblock[#reblock + 1] = d
    end
  elseif not dout then
    if applied == 'x' and not run then
      cancel[#cancel + 1] = dq; cancel[#cancel + 1] = d
    elseif (tonumber(redis.call('HGET', base .. 'left', d)) or 0) <= 0 then
      release[#release + 1] = dq; release[#release + 1] = d
    end
  end
end
return {release, cancel, reblock}
