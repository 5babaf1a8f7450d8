--[[
  readEvents: the mirror writer's read of new entries of one queue's events
  stream (src/redis/stores/mirror-stream.ts), behind the restore fence.

  KEYS[1] events stream  KEYS[2] meta
  ARGV[1] consumer group  ARGV[2] consumer  ARGV[3] max entries

  Returns the XREADGROUP reply for '>' when something is new. Otherwise —
  nothing new, or the restore fence holds (includes/fence.lua: on a Redis
  that restarted nothing is mirrored until the restore watch has checked the
  queue against PostgreSQL; reading would move the consumer group past what
  PostgreSQL holds and hide an older snapshot from the watch) — the id of the
  newest entry in the stream ('0-0' when empty), a string: every entry after
  it is new, so an idle writer can block on XREAD from there
  (src/redis/stores/mirror-doorbell.ts) instead of reading again and again.
]]
@include "fence"

local function tail()
  local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
  if last[1] then return last[1][1] end
  return '0-0'
end

if fenced(redis.call('HGET', KEYS[2], 'vr')) then return tail() end
local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS', KEYS[1], '>')
if r then return r end
return tail()
