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
@include "flowrecord"

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local base = ARGV[1]
local n = clamp(ARGV[3], 1, 20000, 1)
writeFlowRecord(base, KEYS[1], ARGV[2], n, 4, 5, nowMs())
return 1
