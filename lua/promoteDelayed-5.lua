--[[
  promoteDelayed: moves due delayed jobs to waiting (safety net beside the
  promotion that every claim does first).

  KEYS[1] delayed  KEYS[2] waiting  KEYS[3] failed  KEYS[4] events  KEYS[5] wake
  ARGV[1] key prefix   ARGV[2] max jobs per call
  Returns {promoted, nextDueInMs (-1 if none)}.
  Guarantee: only jobs still 'delayed' with runAt <= Redis now move; one
  'promoted' event each.
]]
@include "errors"
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"
@include "fence"
@include "promote"

-- The restore fence (includes/fence.lua): nothing moves until the queue is checked.
if fenced(redis.call('HGET', ARGV[1] .. 'meta', 'vr')) then return {0, FENCE_RETRY_MS} end
local now = nowMs()
local n = promoteDue(ARGV[1], KEYS[1], KEYS[2], KEYS[3], KEYS[4], now, clamp(ARGV[2], 1, 100000, 1000))
if n > 0 then wake(KEYS[5]) end
return {n, nextDelayedIn(KEYS[1], now)}
