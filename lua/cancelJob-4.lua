--[[
  cancelJob: cancels a job at a client's request.

  KEYS[1] waiting  KEYS[2] delayed  KEYS[3] events  KEYS[4] meta
  ARGV[1] key prefix   ARGV[2] job id   ARGV[3] pub/sub channel for cancel requests
  Returns {code, status}: 1 'cancelled' (was waiting, delayed or blocked: a
  flow's job, whose outcome goes to the flow outbox), 2 'active'
  (cancel requested: the holder's AbortSignal fires on its next heartbeat or
  at once through the channel), ERR_WRONG_STATE with the terminal status,
  ERR_NOT_FOUND.
  Guarantee: exactly one event ('cancelled' or 'cancel_requested').
]]
@include "errors"
@include "now"
@include "emit"
@include "job"
@include "fence"
@include "lanes"
@include "flowout"

-- The restore fence (includes/fence.lua): no change on a queue not checked since Redis restarted.
if fenced(redis.call('HGET', KEYS[4], 'vr')) then return {ERR_RESTORING, ''} end
local id = ARGV[2]
local jk = jobKey(ARGV[1], id)
local f = safeHmget(jk, 's', 'a', 'cr', 'ck', 'fl')
if not f or not f[1] then return {ERR_NOT_FOUND, ''} end
local s = f[1]
local now = nowMs()
if s == 'waiting' or s == 'delayed' then
  local removed = redis.call('ZREM', s == 'waiting' and KEYS[1] or KEYS[2], id) == 1
  if s == 'waiting' then laneRemove(ARGV[1], id, f[4], removed) end
  redis.call('HSET', jk, 's', 'cancelled', 'fa', now, 'ua', now)
  emit(KEYS[3], now, 'cancelled', id, s, 'cancelled', f[2], {'r', 'client'})
  flowOut(ARGV[1], f[5], id, 'x')
  return {1, 'cancelled'}
elseif s == 'blocked' then
  -- A flow job waiting for its dependencies (docs/workflows.md).
  redis.call('ZREM', ARGV[1] .. 'blocked', id)
  redis.call('HSET', jk, 's', 'cancelled', 'fa', now, 'ua', now)
  emit(KEYS[3], now, 'cancelled', id, 'blocked', 'cancelled', f[2], {'r', 'client'})
  flowOut(ARGV[1], f[5], id, 'x')
  return {1, 'cancelled'}
elseif s == 'active' then
  if f[3] ~= '1' then
    redis.call('HSET', jk, 'cr', 1, 'ua', now)
    emit(KEYS[3], now, 'cancel_requested', id, 'active', 'active', f[2], {'r', 'client'})
    redis.call('PUBLISH', ARGV[3], id)
  end
  return {2, 'active'}
end
return {ERR_WRONG_STATE, s}
