--[[
  overrideKey: sets or removes one concurrency key's limits (API.md v1.2
  "overrides for one key").

  KEYS[1] overrides hash (<base>kov)  KEYS[2] wake
  ARGV[1] key prefix   ARGV[2] the concurrency key
  ARGV[3] "concurrency|rateMax|rateDurationMs" merged into the stored one:
    '~' = keep that field, '' = clear it (the queue's applies); '' as a whole removes the override
  Returns {the override stored before or false, the one stored now or false}.
  Guarantee: the merge happens here, in one step, so two concurrent changes
  of different fields both land; the key's lane, if it has ready jobs, goes
  back to the ring so the next claim applies the new limits (a raised limit
  frees it at once).
]]
@include "now"
@include "score"
@include "lanes"

-- "a|b|c" as its three fields ('' each when malformed).
local function fields(v)
  local a = v and string.find(v, '|', 1, true)
  local b = a and string.find(v, '|', a + 1, true)
  if not b then return {'', '', ''} end
  return {string.sub(v, 1, a - 1), string.sub(v, a + 1, b - 1), string.sub(v, b + 1)}
end

local prev = redis.call('HGET', KEYS[1], ARGV[2])
local L = lanesCtx(ARGV[1])
local now = nil
if ARGV[3] ~= '' then
  local old, new = fields(prev), fields(ARGV[3])
  for i = 1, 3 do
    if new[i] == '~' then new[i] = old[i] end
  end
  if new[1] ~= '' or new[2] ~= '' then now = new[1] .. '|' .. new[2] .. '|' .. new[3] end
end
-- A concurrency override: slots are counted from now on (recounted first).
if now and string.sub(now, 1, 1) ~= '|' then slotsOn(L) end
if now then redis.call('HSET', KEYS[1], ARGV[2], now) else redis.call('HDEL', KEYS[1], ARGV[2]) end
-- Turns mode has no lanes to hold a key back: the move into lanes is marked
-- here, in the same step (the caller runs it; the maintenance pass finishes
-- it if the caller dies first).
if now and L.tn and not L.mig then redis.call('HSET', ARGV[1] .. 'meta', 'kmig', '1') end
local k = ARGV[2]
redis.call('SREM', ARGV[1] .. 'kblk', k)
redis.call('ZREM', ARGV[1] .. 'kpark', k)
local lk = laneKey(L, k)
if redis.call('EXISTS', lk) == 1 then
  ringAdd(L, k, lk)
  redis.call('RPUSH', KEYS[2], 1)
end
return {prev or false, now or false}
