--[[
  overrideKey: sets or removes one concurrency key's limits (API.md v1.2
  "overrides for one key").

  KEYS[1] overrides hash (<base>kov)  KEYS[2] wake
  ARGV[1] key prefix   ARGV[2] the concurrency key
  ARGV[3] "concurrency|rateMax|rateDurationMs" ('' fields: the queue's applies), or '' to remove
  Returns the override stored before, or false.
  Guarantee: the key's lane, if it has ready jobs, goes back to the ring so
  the next claim applies the new limits (a raised limit frees it at once).
]]
@include "now"
@include "score"
@include "lanes"

local prev = redis.call('HGET', KEYS[1], ARGV[2])
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[2]) else redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
local L = lanesCtx(ARGV[1])
local k = ARGV[2]
redis.call('SREM', ARGV[1] .. 'kblk', k)
redis.call('ZREM', ARGV[1] .. 'kpark', k)
local lk = laneKey(L, k)
if redis.call('EXISTS', lk) == 1 then
  ringAdd(L, k, lk)
  redis.call('RPUSH', KEYS[2], 1)
end
return prev
