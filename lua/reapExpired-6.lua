--[[
  reapExpired: the lease reaper. Moves jobs whose lease expired on.

  KEYS[1] active  KEYS[2] waiting  KEYS[3] failed  KEYS[4] events  KEYS[5] wake
  KEYS[6] delayed
  ARGV[1] key prefix   ARGV[2] max jobs per call
  Returns {reaped, nextExpiryInMs (-1 if none)}.
  Guarantee: compare-and-set inside the script: only a job still 'active' whose
  lease (the active set's score, renewed atomically by extendLocks) is past is
  touched, so a job completed or heartbeated meanwhile is never moved. An expired lease counts as
  an attempt: attempts left -> back to its original place in waiting
  ('stalled', reason lease_expired); none left -> dead-letter queue with two
  events, 'stalled' (active -> active: API.md records every expired lease as
  'stalled') then 'failed' (the one terminal event CASES.md wants per job),
  both reason lease_expired — the only transition written as two events;
  cancel pending -> 'cancelled'.
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

local prefix = ARGV[1]
-- The restore fence (includes/fence.lua): nothing moves until the queue is checked.
if fenced(redis.call('HGET', prefix .. 'meta', 'vr')) then return {0, FENCE_RETRY_MS} end
local now = nowMs()
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, clamp(ARGV[2], 1, 100000, 1000))
local reaped = 0
local woke = false
for _, id in ipairs(ids) do
  local jk = jobKey(prefix, id)
  local f, err = safeHmget(jk, 's', 'lt', 'a', 'o', 'pr', 'sq', 'cr', 'x', 'w', 'ck', 'fl')
  if not f then
    redis.call('ZREM', KEYS[1], id)
    deadLetterCorrupt(prefix, KEYS[3], KEYS[4], id, now, 'active', err)
  elseif f[1] ~= 'active' then
    redis.call('ZREM', KEYS[1], id)
    -- Another valid state or a missing key: a stale entry, dropped. A hash
    -- with a garbage or missing state would be dropped from every set: DLQ it.
    if f[1] and not VALID_STATES[f[1]] then
      deadLetterCorrupt(prefix, KEYS[3], KEYS[4], id, now, 'active', 'unknown state')
    elseif not f[1] and redis.call('EXISTS', jk) == 1 then
      deadLetterCorrupt(prefix, KEYS[3], KEYS[4], id, now, 'active', 'state missing')
    end
  else
    redis.call('ZREM', KEYS[1], id)
    if slotFree(prefix, f[10]) then woke = true end
    redis.call('HDEL', jk, 'lt')
    local a, ma = tonumber(f[3]) or 1, unpackOpts(f[4]) or 1
    local extra = {'x', f[8] or 0, 'w', f[9] or '', 'r', 'lease_expired'}
    if f[7] == '1' then
      redis.call('HSET', jk, 's', 'cancelled', 'fa', now, 'ua', now)
      emit(KEYS[4], now, 'cancelled', id, 'active', 'cancelled', a, extra)
      flowOut(prefix, f[11], id, 'x')
    elseif a >= ma then
      local msg = 'lease expired: the worker stopped heartbeating (stalled) on attempt ' .. a .. ' of ' .. ma
      redis.call('HSET', jk, 's', 'failed', 'e', msg, 'fa', now, 'ua', now)
      redis.call('ZADD', KEYS[3], now, id)
      extra[#extra + 1] = 'er'; extra[#extra + 1] = msg
      emit(KEYS[4], now, 'stalled', id, 'active', 'active', a, extra)
      emit(KEYS[4], now, 'failed', id, 'active', 'failed', a, extra)
      flowOut(prefix, f[11], id, 'x')
    elseif tonumber(f[5]) and tonumber(f[6]) then
      -- iso: its next run is alone (claimJobs), so if it crashes its worker
      -- again it takes no other job down with it.
      redis.call('HSET', jk, 's', 'waiting', 'e', 'lease expired (stalled) on attempt ' .. a, 'ua', now, 'iso', 1)
      makeReady(prefix, KEYS[2], id, jk, f[5], f[6], f[10])
      emit(KEYS[4], now, 'stalled', id, 'active', 'waiting', a, extra)
      woke = true
    else
      deadLetterCorrupt(prefix, KEYS[3], KEYS[4], id, now, 'active', 'priority or sequence missing')
    end
    reaped = reaped + 1
  end
end
if woke then wake(KEYS[5]) end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local hint = -1
if nxt[2] then hint = math.max(0, tonumber(nxt[2]) - now) end
return {reaped, hint}
