--[[
  restoreFlow: rebuilds a flow's record (lua/recordFlow-1.lua's shape) from
  PostgreSQL after Redis lost it, or brings an existing one up to date with
  the jobs of a queue just restored (src/restore/flow-restore.ts;
  docs/workflows.md "PostgreSQL, restore, Redis loss"). In the flow's own
  slot (<prefix>:{flow:<id>}:), like recordFlow and advanceFlow.

  KEYS[1] the flow's meta hash (<base>meta)
  ARGV[1] the flow's key base   ARGV[2] project   ARGV[3] createdAt (ms)
  ARGV[4] number of jobs N (1..10,000)
  then 7 fields per job (every job of the flow): job id, queue,
    policy ('c' | 'r'), dependencies as job ids joined by ',' ('' none),
    ref ('' none), outcome ('c' completed | 'x' failed or cancelled | '' none),
    authoritative ('1': its state in PostgreSQL is newer than any record
    Redis kept, its queue being restored | '0')
  - Record missing: written as recordFlow writes it (q, deps, dnts, refs,
    pol, left = number of dependencies, meta with nc = nx = 0), then every
    outcome given is applied.
  - Record present: only authoritative outcomes are applied (the others may
    be older than what the flow worker already applied from Redis).
  Applying an outcome is advanceFlow's: skipped when `out` holds one for the
  job; else `out` and nc/nx are set and each dependent's `left` loses one
  ('c' always, 'x' only for policy-'r' dependents).
  Returns {created 1|0, outcomes applied, release, cancel}, release and cancel
  flat lists of queue, job id over the jobs given that have dependencies and
  no outcome: cancel = policy 'c' with a dependency whose outcome is 'x';
  release = the others whose `left` is 0 or less (the caller moves each
  with lua/moveFlowJobs-7.lua, a no-op on a job not blocked).
  Guarantee: atomic; idempotent (a second call applies nothing and answers
  the same lists); O(jobs + edges).
]]
@include "now"
@include "clamp"

local base = ARGV[1]
local n = clamp(ARGV[4], 1, 10000, 1)
local F = 7
if #ARGV ~= 4 + n * F then return redis.error_reply('restoreFlow: expected ' .. n .. ' jobs of 7 fields') end
local created = 0
local function hset(key, flat)
  -- In slices: Lua's unpack stops near 8,000 values.
  for i = 1, #flat, 2000 do
    redis.call('HSET', key, unpack(flat, i, math.min(#flat, i + 1999)))
  end
end

if redis.call('EXISTS', KEYS[1]) == 0 then
  created = 1
  local q, deps, dnts, left, pol, refs = {}, {}, {}, {}, {}, {}
  for i = 0, n - 1 do
    local b = 5 + i * F
    local id, queue, p, d, ref = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
    q[#q + 1] = id; q[#q + 1] = queue
    if ref ~= '' then refs[#refs + 1] = id; refs[#refs + 1] = ref end
    local count = 0
    if d ~= '' then
      deps[#deps + 1] = id; deps[#deps + 1] = d
      for dep in string.gmatch(d, '[^,]+') do
        count = count + 1
        -- A list per dependency, joined once (as recordFlow-1.lua: appending to a string is quadratic).
        local list = dnts[dep]
        if not list then list = {}; dnts[dep] = list end
        list[#list + 1] = id
      end
    end
    left[#left + 1] = id; left[#left + 1] = count
    if p == 'r' then pol[#pol + 1] = id; pol[#pol + 1] = 'r' end
  end
  hset(base .. 'q', q)
  if #deps > 0 then hset(base .. 'deps', deps) end
  local dn = {}
  for id, list in pairs(dnts) do dn[#dn + 1] = id; dn[#dn + 1] = table.concat(list, ',') end
  if #dn > 0 then hset(base .. 'dnts', dn) end
  hset(base .. 'left', left)
  if #pol > 0 then hset(base .. 'pol', pol) end
  if #refs > 0 then hset(base .. 'refs', refs) end
  local ca = clamp(ARGV[3], 0, MAX_TIME_MS, nowMs())
  redis.call('HSET', KEYS[1], 'project', ARGV[2], 'n', n, 'createdAt', int(ca), 'nc', 0, 'nx', 0)
end

-- Outcomes, as lua/advanceFlow-1.lua applies them.
local applied = 0
for i = 0, n - 1 do
  local b = 5 + i * F
  local id, oc = ARGV[b], ARGV[b + 5]
  if (oc == 'c' or oc == 'x') and (created == 1 or ARGV[b + 6] == '1')
    and redis.call('HEXISTS', base .. 'q', id) == 1 and not redis.call('HGET', base .. 'out', id) then
    redis.call('HSET', base .. 'out', id, oc)
    redis.call('HINCRBY', KEYS[1], oc == 'c' and 'nc' or 'nx', 1)
    local list = redis.call('HGET', base .. 'dnts', id)
    if list then
      for d in string.gmatch(list, '[^,]+') do
        if oc == 'c' or redis.call('HGET', base .. 'pol', d) == 'r' then redis.call('HINCRBY', base .. 'left', d, -1) end
      end
    end
    applied = applied + 1
  end
end

-- What the queues must do: the flow worker's release and cancel, over the whole flow.
local release, cancel = {}, {}
for i = 0, n - 1 do
  local b = 5 + i * F
  local id = ARGV[b]
  local d = redis.call('HGET', base .. 'deps', id)
  if d and not redis.call('HGET', base .. 'out', id) then
    local dq = redis.call('HGET', base .. 'q', id)
    local failed = false
    if redis.call('HGET', base .. 'pol', id) ~= 'r' then
      for dep in string.gmatch(d, '[^,]+') do
        if redis.call('HGET', base .. 'out', dep) == 'x' then failed = true; break end
      end
    end
    if failed then
      cancel[#cancel + 1] = dq; cancel[#cancel + 1] = id
    elseif (tonumber(redis.call('HGET', base .. 'left', id)) or 0) <= 0 then
      release[#release + 1] = dq; release[#release + 1] = id
    end
  end
end
return {created, applied, release, cancel}
