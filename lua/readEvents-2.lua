--[[
  readEvents: the mirror writer's read of new entries of one queue's events
  stream (src/redis/stores/mirror-stream.ts), behind the restore fence.

  KEYS[1] events stream  KEYS[2] meta
  ARGV[1] consumer group  ARGV[2] consumer  ARGV[3] max entries

  Returns the XREADGROUP reply for '>' (nil when nothing is new), or nil
  without reading while the restore fence holds (includes/fence.lua): on a
  Redis that restarted, nothing is mirrored until the restore watch has
  checked the queue against PostgreSQL — reading would move the consumer
  group past what PostgreSQL holds and hide an older snapshot from the watch.
]]
@include "fence"

if fenced(redis.call('HGET', KEYS[2], 'vr')) then return nil end
return redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS', KEYS[1], '>')
