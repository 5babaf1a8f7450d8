--[[
  recordFlow: writes a flow's record (docs/workflows.md "Redis layout"), in
  the flow's own slot (<prefix>:{flow:<id>}:). Called once per flow, before
  its jobs are created blocked in their queues.

  KEYS[1] the flow's meta hash (<base>meta)
  ARGV[1] the flow's key base   ARGV[2] project   ARGV[3] number of jobs N (1..20,000; POST /flows
    allows 1,000, the engine's bound is wider for benchmarks of wide fan-ins)
  then 5 fields per job: job id, queue, policy ('c' cancel | 'r' run),
    dependencies as job ids joined by ',' ('' for none), its ref in the flow ('' none)
  Hashes (job id -> value): q (its queue), deps (its dependencies), dnts (its
  dependents, built here), refs (its ref), left (dependencies still to satisfy: to complete
  for 'c', to end for 'r'), pol (only 'r' jobs), out (outcomes applied,
  advanceFlow-1.lua). Meta: project, n, createdAt (ms), nc / nx (jobs
  completed / ended otherwise).
  Returns 1 when written, 0 when the flow exists already (nothing written).
  Guarantee: all of the record or none of it; every dependency named is a
  job of this record (the caller validated the graph: src/core/flow-graph.ts).
]]
@include "now"
@include "clamp"

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local base = ARGV[1]
local n = clamp(ARGV[3], 1, 20000, 1)
local q, deps, dnts, left, pol, refs = {}, {}, {}, {}, {}, {}
for i = 0, n - 1 do
  local b = 4 + i * 5
  local id, queue, p, d, ref = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
  q[#q + 1] = id; q[#q + 1] = queue
  if ref and ref ~= '' then refs[#refs + 1] = id; refs[#refs + 1] = ref end
  local count = 0
  if d ~= '' then
    deps[#deps + 1] = id; deps[#deps + 1] = d
    for dep in string.gmatch(d, '[^,]+') do
      count = count + 1
      -- A list per dependency, joined once at the end: appending to a string
      -- copies it each time (quadratic: a 1,000-job complete DAG held Redis 20 s).
      local list = dnts[dep]
      if not list then list = {}; dnts[dep] = list end
      list[#list + 1] = id
    end
  end
  left[#left + 1] = id; left[#left + 1] = count
  if p == 'r' then pol[#pol + 1] = id; pol[#pol + 1] = 'r' end
end
local function hset(key, flat)
  -- In slices: Lua's unpack stops near 8,000 values.
  for i = 1, #flat, 2000 do
    redis.call('HSET', key, unpack(flat, i, math.min(#flat, i + 1999)))
  end
end
hset(base .. 'q', q)
if #deps > 0 then hset(base .. 'deps', deps) end
local dn = {}
for id, list in pairs(dnts) do dn[#dn + 1] = id; dn[#dn + 1] = table.concat(list, ',') end
if #dn > 0 then hset(base .. 'dnts', dn) end
hset(base .. 'left', left)
if #pol > 0 then hset(base .. 'pol', pol) end
if #refs > 0 then hset(base .. 'refs', refs) end
redis.call('HSET', KEYS[1], 'project', ARGV[2], 'n', n, 'createdAt', int(nowMs()), 'nc', 0, 'nx', 0)
return 1
