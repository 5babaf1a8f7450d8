--[[
  verifyQueue: marks a queue checked against PostgreSQL on this Redis server
  (the restore watch, src/restore/loss-watch.ts), lifting the restore fence
  (includes/fence.lua).

  KEYS[1] epoch marker  KEYS[2] events stream  KEYS[3] meta  KEYS[4] wake
  ARGV[1] the epoch the check saw   ARGV[2] the mirror's consumer group
  ARGV[3] the newest stream id PostgreSQL holds for the queue, or ''
  ARGV[4] the run id of the server the check was made on, or '' (any)

  Returns 'ok', or 'changed' (nothing written) when the epoch marker is no
  longer ARGV[1] (another process reset or restored the queue meanwhile) or
  the server is not the one checked (a failover since: check again).
  Guarantee: the group's last-delivered id is raised to ARGV[3] when it is
  below (never lowered; the group and stream are created when missing): every
  entry up to ARGV[3] is in PostgreSQL already, and a group behind
  PostgreSQL is how the watch tells a rewound Redis. Then meta 'vr' = this
  server's run id, and idle workers are woken when it changed.
]]
@include "wake"
@include "group"

if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 'changed' end
local runId = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
if ARGV[4] ~= '' and ARGV[4] ~= runId then return 'changed' end
local last = lastDelivered(KEYS[2], ARGV[2])
if ARGV[3] ~= '' then
  if not last then
    redis.pcall('XGROUP', 'CREATE', KEYS[2], ARGV[2], ARGV[3], 'MKSTREAM')
  elseif idLess(last, ARGV[3]) then
    redis.call('XGROUP', 'SETID', KEYS[2], ARGV[2], ARGV[3])
  end
end
if redis.call('HGET', KEYS[3], 'vr') ~= runId then
  redis.call('HSET', KEYS[3], 'vr', runId)
  wake(KEYS[4])
end
return 'ok'
