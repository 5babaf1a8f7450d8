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
  A job PostgreSQL never heard of, named by a dependent's edge and lost with
  Redis, comes as outcome 'x' with its queue ('' when unknown), no
  dependencies, authoritative: it ended without completing.
  Returns {created 1|0, outcomes applied, release, cancel}, release and cancel
  flat lists of queue, job id over every job of the record without an
  outcome (includes/flowmoves.lua: a job without dependencies included); the
  restore reads them again with lua/flowMoves-1.lua once the queue's jobs
  are back, and moves each with lua/moveFlowJobs-7.lua.
  Guarantee: atomic; idempotent (a second call applies nothing and answers
  the same lists); O(jobs + edges).
]]
@include "now"
@include "clamp"
@include "flowrecord"
@include "flowmoves"

local base = ARGV[1]
local n = clamp(ARGV[4], 1, 10000, 1)
local F = 7
if #ARGV ~= 4 + n * F then return redis.error_reply('restoreFlow: expected ' .. n .. ' jobs of 7 fields') end
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  created = 1
  writeFlowRecord(base, KEYS[1], ARGV[2], n, 5, F, clamp(ARGV[3], 0, MAX_TIME_MS, nowMs()))
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

-- What the queues must do, over the whole record (includes/flowmoves.lua).
local release, cancel = flowMoves(base)
return {created, applied, release, cancel}
