--[[
  purgeDlq: deletes up to a chunk of a queue's dead-letter jobs from Redis
  (DELETE /jobs/dlq). The audit rows stay: each deleted job gets a 'purged'
  event, which the PostgreSQL mirror records and which takes the job out of
  the dead_letter_jobs listing while the job stays readable in the history.

  KEYS[1] failed (the DLQ sorted set)   KEYS[2] events
  ARGV[1] key prefix   ARGV[2] chunk size (max jobs this call)
  Returns {purged, taken}: jobs purged, and set members taken off (taken
  below the chunk size means the set was empty when the script ended).
  Guarantee: only jobs in the DLQ set whose hash says 'failed' (or cannot be
  read at all: a corrupted key) are deleted; each purged job is removed from
  the set, its hash deleted and exactly one 'purged' event appended in the
  same step. A set member whose hash says otherwise is only dropped from the set.
]]
@include "now"
@include "emit"
@include "job"
@include "errors"
@include "fence"

local prefix = ARGV[1]
-- The restore fence (includes/fence.lua): no change on a queue not checked since Redis restarted.
if fenced(redis.call('HGET', prefix .. 'meta', 'vr')) then return {ERR_RESTORING, 0} end
local ids = redis.call('ZRANGE', KEYS[1], 0, clamp(ARGV[2], 1, 100000, 1000) - 1)
local now = nowMs()
local n = 0
for _, id in ipairs(ids) do
  local jk = jobKey(prefix, id)
  redis.call('ZREM', KEYS[1], id)
  local f = safeHmget(jk, 's', 'a')
  -- A missing field list means the key is not a hash (corrupted): purge it too.
  if not f or f[1] == 'failed' or f[1] == false then
    redis.call('DEL', jk)
    emit(KEYS[2], now, 'purged', id, 'failed', 'failed', f and f[2] or 0, {'r', 'client'})
    n = n + 1
  end
end
return {n, #ids}
