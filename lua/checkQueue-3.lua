--[[
  checkQueue: what the restore watch (src/restore/loss-watch.ts) needs to
  know of one queue, read in one step.

  KEYS[1] epoch marker  KEYS[2] events stream  KEYS[3] meta
  ARGV[1] the mirror's consumer group

  Returns {epoch|'', lastDelivered|'', vr|'', runId}: the epoch marker, the
  group's last-delivered id ('' when the stream or group is missing), the run
  id the queue was last checked on (meta 'vr', includes/fence.lua) and the
  run id of this Redis server.
  Guarantee: read only.
]]
@include "group"

local info = redis.call('INFO', 'server')
return {
  redis.call('GET', KEYS[1]) or '',
  lastDelivered(KEYS[2], ARGV[1]) or '',
  redis.call('HGET', KEYS[3], 'vr') or '',
  string.match(info, 'run_id:(%w+)') or '',
}
