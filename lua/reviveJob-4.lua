--[[
  reviveJob: DLQ retry of a cancelled (or failed) job whose hash Redis has
  already pruned (lua/forgetJobs-2.lua deletes finished jobs once mirrored):
  recreates it from its PostgreSQL copy straight into waiting, with fresh
  counters, as lua/retryJob-5.lua would have left it.

  KEYS[1] waiting  KEYS[2] events  KEYS[3] wake  KEYS[4] meta
  ARGV[1] key prefix   ARGV[2] job id   ARGV[3] type   ARGV[4] payload JSON
  (the PostgreSQL copy, or the new payload of the retry)   ARGV[5] priority
  ARGV[6] options "maxAttempts;timeoutMs;backoff"   ARGV[7] createdAt ms
  ARGV[8] executionSeq (runs so far)   ARGV[9] idempotency key or ''
  ARGV[10] '1' when ARGV[4] is a new payload (carried on the event), else '0'
  ARGV[11] concurrency key or '' (optional)
  ARGV[12] a flow job's fields or '' (optional): "flowId\npolicy\nref\ndeps JSON"
    (includes/flowspec.lua): kept on the hash, so its end reaches the flow
    outbox again, and a 'r' outcome written to the outbox, as retryJob does
    (the flow takes back its failure and brings back the dependents it
    cancelled).
  Returns {1, 'waiting'}, or {0, status} with nothing written when the job's
  hash exists (the caller then uses retryJob, which checks its state).
  Guarantee: never overwrites an existing hash; the job keeps its
  executionSeq (so execution rows never collide) and goes to the back of its
  priority (new sequence); exactly one 'retried_from_dlq' event.
]]
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"
@include "errors"
@include "fence"
@include "lanes"
@include "flowspec"
@include "flowout"

-- The restore fence (includes/fence.lua): no change on a queue not checked since Redis restarted.
if fenced(redis.call('HGET', KEYS[4], 'vr')) then return {ERR_RESTORING, ''} end
local id = ARGV[2]
local jk = jobKey(ARGV[1], id)
local t = redis.call('TYPE', jk)
if type(t) == 'table' then t = t.ok end
if t ~= 'none' then
  local s = redis.pcall('HGET', jk, 's')
  return {0, type(s) == 'string' and s or 'unknown'}
end
local flow = nil
if ARGV[12] and ARGV[12] ~= '' then
  flow = parseFlowSpec(ARGV[12])
  if not flow then return redis.error_reply('reviveJob: malformed flow for job ' .. id) end
end
local now = nowMs()
local pr = clamp(ARGV[5], -100, 100, 0)
local seq = redis.call('HINCRBY', KEYS[4], 'seq', 1)
local args = {'HSET', jk, 's', 'waiting', 'ty', ARGV[3], 'pr', pr, 'o', ARGV[6], 'ca', ARGV[7], 'a', 0,
  'sq', seq, 'ra', now, 'ua', now}
local x = tonumber(ARGV[8]) or 0
if x > 0 then args[#args + 1] = 'x'; args[#args + 1] = x end
if ARGV[9] ~= '' then args[#args + 1] = 'ik'; args[#args + 1] = ARGV[9] end
local ck = ARGV[11] ~= '' and ARGV[11] or nil
if ck then args[#args + 1] = 'ck'; args[#args + 1] = ck end
payloadFields(ARGV[4], args)
if flow then
  local names = {'fl', 'fp', 'rf', 'dp'}
  for i = 1, 4 do args[#args + 1] = names[i]; args[#args + 1] = flow[i] end
end
redis.call(unpack(args))
makeReady(ARGV[1], KEYS[1], id, jk, pr, seq, ck)
local extra = {'r', 'manual'}
if ARGV[10] == '1' then extra[#extra + 1] = 'p'; extra[#extra + 1] = ARGV[4] end
emit(KEYS[2], now, 'retried_from_dlq', id, 'cancelled', 'waiting', 0, extra)
if flow then flowOut(ARGV[1], flow[1], id, 'r') end
wake(KEYS[3])
return {1, 'waiting'}
