--[[
  flowMoves: what a flow's record says its queues must do now
  (src/restore/flow-restore.ts, once the restored queue's jobs are back in
  Redis; docs/workflows.md "PostgreSQL, restore, Redis loss"). In the flow's
  own slot (<prefix>:{flow:<id>}:). Read-only.

  KEYS[1] the flow's meta hash (<base>meta)
  ARGV[1] the flow's key base
  Returns {release, cancel}: flat lists of queue, job id (includes/flowmoves.lua);
  two empty lists when the record is missing.
  Read after the queue's jobs came back, not before: a dependency that
  completes meanwhile is either in the record already (its dependent is in
  the lists) or released by the flow worker, whose move now finds the job.
]]
@include "flowmoves"

if redis.call('EXISTS', KEYS[1]) == 0 then return {{}, {}} end
local release, cancel = flowMoves(ARGV[1])
return {release, cancel}
