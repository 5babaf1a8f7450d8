-- Workflows (docs/workflows.md "Release"): a flow job's outcome, appended to
-- its queue's flow outbox in the step that ends it, for the flow worker
-- (src/flows/flow-worker.ts): "flowId|jobId|outcome|n|t", outcome 'c'
-- completed, 'x' failed or cancelled, 'r' retried from the dead-letter queue;
-- n numbers the queue's entries (meta fseq), so two outcomes of one job never
-- read as one (lua/takeFlowOutcomes-2.lua keeps entries in flight in a sorted
-- set); t is Redis's time in µs, so the flow's record can tell an entry
-- handed out again after its lease from a later outcome of the same job
-- (lua/advanceFlow-1.lua ignores an outcome older than the last applied).
-- An entry into an empty outbox publishes the queue's name on
-- `<prefix>:flows:wake` (a flow worker busy or away finds the rest on its
-- next pass): the release waits for no timer. PUBLISH names no key, so this
-- stays a one-slot script on Redis Cluster.
-- prefix: the queue's key base `<prefix>:{<queue>}:`.
-- fl: the job's flow id (hash field fl), nil for a job outside flows (nothing written).
local function flowOut(prefix, fl, id, outcome)
  if not fl then return end
  local n = redis.call('HINCRBY', prefix .. 'meta', 'fseq', 1)
  local now = redis.call('TIME')
  local t = now[1] .. string.format('%06d', tonumber(now[2]))
  if redis.call('RPUSH', prefix .. 'flowq', fl .. '|' .. id .. '|' .. outcome .. '|' .. n .. '|' .. t) == 1 then
    local root, queue = string.match(prefix, '^(.*):{([^{}]*)}:$')
    if root then redis.call('PUBLISH', root .. ':flows:wake', queue) end
  end
end
