--[[
  retryJob: takes a job out of the dead-letter queue (or a cancelled job) and
  puts it back in waiting with fresh counters.

  KEYS[1] failed  KEYS[2] waiting  KEYS[3] events  KEYS[4] wake  KEYS[5] meta
  ARGV[1] key prefix   ARGV[2] job id   ARGV[3] new payload JSON, or '' to keep it
  Returns {code, status}: 1 'waiting', ERR_WRONG_STATE with the current status,
  ERR_NOT_FOUND.
  Guarantee: only 'failed' or 'cancelled' jobs move; attempts reset to 0;
  the job goes to the back of its priority (new sequence); one
  'retried_from_dlq' event.
]]
@include "errors"
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"
@include "fence"
@include "lanes"
@include "flowout"

-- The restore fence (includes/fence.lua): no change on a queue not checked since Redis restarted.
if fenced(redis.call('HGET', KEYS[5], 'vr')) then return {ERR_RESTORING, ''} end
local id = ARGV[2]
local jk = jobKey(ARGV[1], id)
local f = safeHmget(jk, 's', 'pr', 'a', 'ck', 'fl')
if not f or not f[1] then return {ERR_NOT_FOUND, ''} end
if f[1] ~= 'failed' and f[1] ~= 'cancelled' then return {ERR_WRONG_STATE, f[1]} end
local now = nowMs()
local pr = tonumber(f[2]) or 0
local seq = redis.call('HINCRBY', KEYS[5], 'seq', 1)
local args = {'HSET', jk, 's', 'waiting', 'a', 0, 'pr', pr, 'sq', seq, 'ra', now, 'ua', now}
local extra = {'r', 'manual'}
if ARGV[3] ~= '' then
  deletePayload(jk)
  payloadFields(ARGV[3], args)
  extra[#extra + 1] = 'p'; extra[#extra + 1] = ARGV[3]
end
redis.call(unpack(args))
redis.call('HDEL', jk, 'fa', 'r', 'cr', 'lt', 'w', 'pg', 'iso', 'cx')
redis.call('ZREM', KEYS[1], id)
makeReady(ARGV[1], KEYS[2], id, jk, pr, seq, f[4])
emit(KEYS[3], now, 'retried_from_dlq', id, f[1], 'waiting', 0, extra)
flowOut(ARGV[1], f[5], id, 'r')
wake(KEYS[4])
return {1, 'waiting'}
