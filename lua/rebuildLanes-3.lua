--[[
  rebuildLanes: (re)builds a queue's lanes after its flow-control settings
  changed (src/redis/stores/lane-settings.ts calls it in chunks until done).

  KEYS[1] waiting  KEYS[2] meta  KEYS[3] wake
  ARGV[1] key prefix   ARGV[2] phase: 'slots' | 'jobs' | 'ring'   ARGV[3] SCAN cursor ('0' to start)
  ARGV[4] entries per call (clamped to 10..10,000)
  Returns the next cursor; '0' when the phase is done.
  'jobs' (from plain, turns or lanes mode): puts every waiting job in its lane with the queue's current lane
  score (aging on, off or changed), marking the queue kmig while it runs (new
  ready jobs join lanes meanwhile, claims keep the plain path until lanes mode
  is on); at the end lanes mode is on (km). Safe to repeat or resume: an
  interrupted rebuild leaves the queue on the plain path, nothing stranded.
  'slots': starts counting slots (includes/lanes.lua slotsOn: recounted from
  the active set in this one step); called before a concurrency limit is set.
  'ring': re-scores the ring for the current fairness (fifo: each lane's head
  job) and puts blocked and parked lanes back (limits changed; each is
  re-checked by the next claim).
  Guarantee: touches only lanes, the ring and lane bookkeeping; never a job's state.
]]
@include "now"
@include "score"
@include "lanes"

local prefix = ARGV[1]
local count = clamp(ARGV[4], 10, 10000, 1000)
local L = lanesCtx(prefix)
if ARGV[2] == 'slots' then
  slotsOn(L)
  return '0'
end
if ARGV[2] == 'jobs' then
  if ARGV[3] == '0' and not L.mig then
    redis.call('HSET', KEYS[2], 'kmig', '1')
    L.mig = true
  end
  local r = redis.call('ZSCAN', KEYS[1], ARGV[3], 'COUNT', count)
  local items = r[2]
  for i = 1, #items, 2 do
    local id = items[i]
    local f = redis.pcall('HMGET', prefix .. 'job:' .. id, 's', 'pr', 'sq', 'ck', 'ra', 'ca')
    if type(f) == 'table' and f[1] == 'waiting' then
      local ck = f[4] or ''
      if ck ~= '' and not L.kk then
        redis.call('HSET', KEYS[2], 'kk', '1')
        L.kk = true
      end
      local lk = laneKey(L, ck)
      redis.call('ZADD', lk, laneScore(L, f[2], f[3], tonumber(f[5]) or tonumber(f[6])), id)
      ringAdd(L, ck, lk)
    end
  end
  if r[1] == '0' then
    -- Lanes from now on (from plain or turns mode): the turns' state goes.
    redis.call('HSET', KEYS[2], 'km', '1')
    redis.call('HDEL', KEYS[2], 'kmig', 'ksp', 'kv')
    redis.call('DEL', prefix .. 'kturn')
    redis.call('RPUSH', KEYS[3], 1)
  end
  return r[1]
end
-- 'ring'
local r = redis.call('ZSCAN', L.ring, ARGV[3], 'COUNT', count)
if not L.rr then
  local items = r[2]
  for i = 1, #items, 2 do
    local k = items[i]
    local h = redis.call('ZRANGE', laneKey(L, k), 0, 0, 'WITHSCORES')
    if h[2] then redis.call('ZADD', L.ring, h[2], k) else redis.call('ZREM', L.ring, k) end
  end
end
if r[1] == '0' then
  -- Blocked and parked lanes back to the ring, a chunk per call until none is left.
  if lanesRecheck(L, count) >= count then return 'more' end
  redis.call('RPUSH', KEYS[3], 1)
end
return r[1]
