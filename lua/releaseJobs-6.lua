--[[
  releaseJobs: gives jobs back without using an attempt (a worker's graceful
  shutdown, or an external worker's POST /jobs/:id/release).

  KEYS[1] active  KEYS[2] waiting  KEYS[3] events  KEYS[4] wake  KEYS[5] meta
  KEYS[6] delayed
  ARGV[1] key prefix   ARGV[2] worker id
  ARGV[3] delay ms before the job may run again (0: at once; clamped to 0..1 year)
  ARGV[4] reason recorded on the event (shutdown | worker)
  ARGV[5..] pairs: job id, lock token
  Returns one code per job: 1 released, 2 cancelled (a cancel was pending),
  ERR_LEASE_LOST, ERR_NOT_FOUND.
  Guarantee: fenced by the token, the state and the lease (only an 'active'
  job whose lock token matches and whose lease has not ended is touched,
  includes/lease.lua; anything else changes nothing: an ended lease is the
  reaper's, and its attempt counts). With no
  delay the job returns to its original place in the waiting set; with one it
  is 'delayed' until now + delay. Its attempt is refunded (attempts-1); one
  'released' event (carrying runAt when delayed).
]]
@include "errors"
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"
@include "lanes"
@include "lease"

local now = nowMs()
local delay = clamp(ARGV[3], 0, MAX_DELAY_MS, 0)
local reason = ARGV[4]
if reason == nil or reason == '' then reason = 'shutdown' end
local out = {}
local any = false
for i = 5, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local jk = jobKey(ARGV[1], id)
  local f = safeHmget(jk, 's', 'lt', 'a', 'pr', 'sq', 'cr', 'x', 'ck')
  if not f or not f[1] then
    out[#out + 1] = ERR_NOT_FOUND
  elseif f[1] ~= 'active' or f[2] ~= token or leaseEnded(KEYS[1], id, now) then
    out[#out + 1] = ERR_LEASE_LOST
  else
    if redis.call('ZREM', KEYS[1], id) == 1 and slotFree(ARGV[1], f[8]) then any = true end
    redis.call('HDEL', jk, 'lt')
    local a = tonumber(f[3]) or 1
    if f[6] == '1' then
      redis.call('HSET', jk, 's', 'cancelled', 'fa', now, 'ua', now)
      emit(KEYS[3], now, 'cancelled', id, 'active', 'cancelled', a, {'x', f[7], 'w', ARGV[2], 'r', 'released'})
      out[#out + 1] = 2
    else
      local refunded = math.max(a - 1, 0)
      if delay > 0 then
        local ra = int(now + delay)
        redis.call('HSET', jk, 's', 'delayed', 'a', refunded, 'ra', ra, 'ua', now)
        redis.call('ZADD', KEYS[6], ra, id)
        emit(KEYS[3], now, 'released', id, 'active', 'delayed', a, {'x', f[7], 'w', ARGV[2], 'r', reason, 'ra', ra})
        -- A long poll sleeps until the earliest delayed job: wake it when this one is now the earliest.
        if redis.call('ZRANGE', KEYS[6], 0, 0)[1] == id then any = true end
      else
        redis.call('HSET', jk, 's', 'waiting', 'a', refunded, 'ua', now)
        makeReady(ARGV[1], KEYS[2], id, jk, f[4], f[5], f[8])
        emit(KEYS[3], now, 'released', id, 'active', 'waiting', a, {'x', f[7], 'w', ARGV[2], 'r', reason})
        any = true
      end
      out[#out + 1] = 1
    end
  end
end
if any then wake(KEYS[4]) end
return out
