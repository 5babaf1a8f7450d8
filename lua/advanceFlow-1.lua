--[[
  advanceFlow: applies job outcomes of one flow to its record (docs/workflows.md
  "Release"), in the flow's own slot, in the order given. Idempotent: an
  outcome already applied changes nothing, and the answer is computed from the
  record, not from the call, so a repeat (the flow worker died after this
  step) answers the same.

  KEYS[1] the flow's meta hash
  ARGV[1] the flow's key base
  ARGV[2] ms the record is kept once every job has an outcome ('' = for good)
  ARGV[3..] triples: job id, outcome ('c' completed | 'x' failed or cancelled |
    'r' retried from the dead-letter queue: its 'x' is taken back), the time
    the outcome was written (µs, the outbox entry's t; '' unknown); 1..1,000
    triples (the flow worker batches one flow's outbox entries; a 'r' goes
    alone). An outcome written before the last one applied for its job (an
    entry handed out again after its lease, once a later outcome — a DLQ
    retry, say — was applied) is stale: ignored, nothing answered for it.
  Returns {release, cancel, reblock}, each a flat list of queue, job id (each
  job at most once), read from the record once every pair is applied:
  - release: dependents of the 'c'/'x' jobs with nothing left to wait for and
    no outcome (the caller unblocks each in its queue; a job no longer blocked
    is left alone);
  - cancel: dependents with policy 'c' and no outcome of the 'x' jobs (cancelled
    with reason dependency_failed; their own 'x' goes on down);
  - reblock: dependents with policy 'c' whose outcome is 'x' (or none yet:
    their cancellation may still be in their queue's outbox) of the 'r' jobs,
    none of whose other dependencies is at 'x' (blocked again if their queue
    cancelled them for a dependency; then the caller applies 'r' to each, and
    so on down the graph). One with another dependency still failed or
    cancelled stays cancelled: that one's retry brings it back.
  Counters: 'c' takes one off each dependent's `left`; 'x' only off policy-'r'
  dependents (a 'c' job waits for completions); 'r' gives it back to policy-'r'
  dependents that have no outcome yet. A job not of the flow (or an unknown
  flow) is ignored.
  Hash `seen`: job id -> the time of the last outcome applied (µs).
  Cost: four HMGETs for the batch, one write per hash, then O(dependents
  touched): a 1,000-child fan-in's batch is a handful of commands, and each
  child's outcome O(1).
]]
local base = ARGV[1]
local release, cancel, reblock = {}, {}, {}
if redis.call('EXISTS', KEYS[1]) == 0 then return {release, cancel, reblock} end
local ids, ocs = {}, {}
local ats = {}
for i = 3, math.min(#ARGV, 3002) - 2, 3 do
  ids[#ids + 1] = ARGV[i]; ocs[#ocs + 1] = ARGV[i + 1]; ats[#ats + 1] = tonumber(ARGV[i + 2])
end
if #ids == 0 then return {release, cancel, reblock} end

local inFlow = redis.call('HMGET', base .. 'q', unpack(ids))
local outs = redis.call('HMGET', base .. 'out', unpack(ids))
local dnts = redis.call('HMGET', base .. 'dnts', unpack(ids))
local seens = redis.call('HMGET', base .. 'seen', unpack(ids))
-- Outcomes as this step leaves them (false: none): the batch's jobs first,
-- other jobs read on demand. Policies read once per dependent.
local out, run, seen = {}, {}, {}
for i, id in ipairs(ids) do
  if out[id] == nil then out[id] = outs[i] or false; seen[id] = tonumber(seens[i]) or false end
end
local function outOf(d)
  if out[d] == nil then out[d] = redis.call('HGET', base .. 'out', d) or false end
  return out[d]
end
local function isRun(d)
  if run[d] == nil then run[d] = redis.call('HGET', base .. 'pol', d) == 'r' end
  return run[d]
end

local delta, written, seenWritten = {}, {}, {}
local touched, touchedList, failed, retried = {}, {}, {}, {}
local nc, nx = 0, 0
for i, id in ipairs(ids) do
  local at = ats[i]
  if inFlow[i] and not (at and seen[id] and at < seen[id]) then
    if at and (not seen[id] or at > seen[id]) then seen[id] = at; seenWritten[id] = at end
    local oc, prev = ocs[i], out[id]
    local deps = {}
    if dnts[i] then for d in string.gmatch(dnts[i], '[^,]+') do deps[#deps + 1] = d end end
    if (oc == 'c' or oc == 'x') and not prev then
      out[id] = oc; written[id] = oc
      if oc == 'c' then nc = nc + 1 else nx = nx + 1 end
      for _, d in ipairs(deps) do
        if oc == 'c' or isRun(d) then delta[d] = (delta[d] or 0) - 1 end
      end
    elseif oc == 'r' and prev == 'x' then
      out[id] = false; written[id] = false
      nx = nx - 1
      for _, d in ipairs(deps) do
        if isRun(d) and not outOf(d) then delta[d] = (delta[d] or 0) + 1 end
      end
    end
    if oc == 'r' then
      retried[#retried + 1] = {id, deps}
    elseif oc == 'c' or oc == 'x' then
      for _, d in ipairs(deps) do
        if not touched[d] then touched[d] = true; touchedList[#touchedList + 1] = d end
      end
      if oc == 'x' then failed[#failed + 1] = {id, deps} end
    end
  end
end

-- The writes: one per hash (plus one counter per dependent touched).
local set, del = {}, {}
for id, v in pairs(written) do
  if v then set[#set + 1] = id; set[#set + 1] = v else del[#del + 1] = id end
end
if #set > 0 then redis.call('HSET', base .. 'out', unpack(set)) end
local seenSet = {}
for id, at in pairs(seenWritten) do seenSet[#seenSet + 1] = id; seenSet[#seenSet + 1] = string.format('%d', at) end
if #seenSet > 0 then redis.call('HSET', base .. 'seen', unpack(seenSet)) end
if #del > 0 then redis.call('HDEL', base .. 'out', unpack(del)) end
if nc ~= 0 then redis.call('HINCRBY', KEYS[1], 'nc', nc) end
if nx ~= 0 then redis.call('HINCRBY', KEYS[1], 'nx', nx) end
for d, n in pairs(delta) do
  if n ~= 0 then redis.call('HINCRBY', base .. 'left', d, n) end
end

-- Every job has an outcome: the record expires after ARGV[2] ms (a retry
-- takes it back; GET /flows/:id reads the history once it is gone).
local ttl = tonumber(ARGV[2])
if ttl and ttl > 0 then
  local m = redis.call('HMGET', KEYS[1], 'n', 'nc', 'nx')
  local done = (tonumber(m[2]) or 0) + (tonumber(m[3]) or 0) >= (tonumber(m[1]) or 1)
  if done or #retried > 0 then
    for _, part in ipairs({'meta', 'q', 'deps', 'dnts', 'left', 'pol', 'out', 'refs', 'seen'}) do
      if done then redis.call('PEXPIRE', base .. part, ttl) else redis.call('PERSIST', base .. part) end
    end
  end
end

-- The answer, from the record as this step leaves it.
local listed = {}
local function add(list, tag, d)
  if listed[tag .. d] then return end
  listed[tag .. d] = true
  list[#list + 1] = redis.call('HGET', base .. 'q', d); list[#list + 1] = d
end
for _, f in ipairs(failed) do
  if out[f[1]] == 'x' then
    for _, d in ipairs(f[2]) do
      if not isRun(d) and not outOf(d) then add(cancel, 'x', d) end
    end
  end
end
-- A dependent with another dependency still failed or cancelled stays
-- cancelled: blocked again, it would wait for good (its policy cancels it).
local function otherFailed(d, retriedId)
  local list = redis.call('HGET', base .. 'deps', d)
  if not list then return false end
  for dep in string.gmatch(list, '[^,]+') do
    if dep ~= retriedId and outOf(dep) == 'x' then return true end
  end
  return false
end
for _, r in ipairs(retried) do
  if not out[r[1]] then
    for _, d in ipairs(r[2]) do
      -- No outcome yet: its cancellation for this job's failure may still be
      -- in its queue's outbox (the retry was applied first); the queue
      -- blocks it again only if it was cancelled for a dependency.
      local o = outOf(d)
      if not isRun(d) and (o == 'x' or not o) and not otherFailed(d, r[1]) then add(reblock, 'b', d) end
    end
  end
end
for _, d in ipairs(touchedList) do
  if not outOf(d) and not listed['x' .. d] and (tonumber(redis.call('HGET', base .. 'left', d)) or 0) <= 0 then
    add(release, 'u', d)
  end
end
return {release, cancel, reblock}
