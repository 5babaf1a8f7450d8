--[[
  resetQueue: the first step of rebuilding a queue Redis holds from an older
  snapshot (src/restore/loss-watch.ts): the epoch marker goes, so the queue
  counts as lost and is restored from PostgreSQL, the restore fence
  (includes/fence.lua) holds until the watch has checked it again, and the
  queue's mirror lock passes to the caller, who prunes and restores under it
  (a mirror writer holding the queue lets it go at its next renewal).

  KEYS[1] epoch marker  KEYS[2] meta  KEYS[3] the queue's mirror lock
  ARGV[1] the epoch the watch found rewound
  ARGV[2] the caller's lock token   ARGV[3] the lock's lease, ms

  Returns 1, or 0 (nothing written) when the marker is no longer ARGV[1]:
  another process reset or restored the queue first — so one replica resets.
  Guarantee: meta 'vr' = 'resetting' until the queue is verified again; any
  restore of the queue meanwhile prunes first (src/restore/restore.ts), so an
  interrupted reset is finished by whoever restores the queue next.
]]
@include "clamp"

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[2], 'vr', 'resetting')
redis.call('SET', KEYS[3], ARGV[2], 'PX', clamp(ARGV[3], 1, MAX_LEASE_MS, 30000))
return 1
