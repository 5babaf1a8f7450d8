--[[
  resetQueue: the first step of rebuilding a queue Redis holds from an older
  snapshot (src/restore/loss-watch.ts): the epoch marker goes, so the queue
  counts as lost and is restored from PostgreSQL, and the restore fence
  (includes/fence.lua) holds until the watch has checked it again.

  KEYS[1] epoch marker  KEYS[2] meta  KEYS[3] the queue's mirror lock
  ARGV[1] the epoch the watch found rewound

  Returns 1, or 0 (nothing written) when the marker is no longer ARGV[1]:
  another process reset or restored the queue first — so one replica resets.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
-- The mirror writer holding the queue lets it go at its next renewal and
-- restores it when it takes it again (or the watch restores it first).
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[2], 'vr', 'resetting')
return 1
