--[[
  releaseJobs: gives jobs back on a worker's graceful shutdown.

  KEYS[1] active  KEYS[2] waiting  KEYS[3] events  KEYS[4] wake  KEYS[5] meta
  ARGV[1] key prefix   ARGV[2] worker id   ARGV[3..] pairs: job id, lock token
  Returns one code per job: 1 released, 2 cancelled (a cancel was pending),
  ERR_LEASE_LOST, ERR_NOT_FOUND.
  Guarantee: fenced by the token; the job returns to its original place in the
  waiting set with its attempt refunded (attempts-1), one 'released' event.
]]
@include "errors"
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"

local now = nowMs()
local out = {}
local any = false
for i = 3, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local jk = jobKey(ARGV[1], id)
  local f = safeHmget(jk, 's', 'lt', 'a', 'pr', 'sq', 'cr', 'x')
  if not f or not f[1] then
    out[#out + 1] = ERR_NOT_FOUND
  elseif f[1] ~= 'active' or f[2] ~= token then
    out[#out + 1] = ERR_LEASE_LOST
  else
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', jk, 'lt')
    local a = tonumber(f[3]) or 1
    if f[6] == '1' then
      redis.call('HSET', jk, 's', 'cancelled', 'fa', now, 'ua', now)
      emit(KEYS[3], now, 'cancelled', id, 'active', 'cancelled', a, {'x', f[7], 'w', ARGV[2], 'r', 'released'})
      out[#out + 1] = 2
    else
      local refunded = math.max(a - 1, 0)
      redis.call('HSET', jk, 's', 'waiting', 'a', refunded, 'ua', now)
      redis.call('ZADD', KEYS[2], waitingScore(f[4], f[5]), id)
      emit(KEYS[3], now, 'released', id, 'active', 'waiting', a, {'x', f[7], 'w', ARGV[2], 'r', 'shutdown'})
      out[#out + 1] = 1
      any = true
    end
  end
end
if any then wake(KEYS[4]) end
return out
