--[[
  extendLocks: heartbeat for several jobs of one queue held by one worker.

  KEYS[1] active
  ARGV[1] key prefix   ARGV[2] lease ms   ARGV[3..] pairs: job id, lock token
  Returns {leaseExpiresAt, code per job}: 1 renewed, 2 renewed and a cancel
  was requested, ERR_LEASE_LOST when the job is not active under that token
  or its lease has ended (includes/lease.lua: an ended lease is not renewed,
  reaped or not).
  Guarantee: a stale or wrong token changes nothing. Not a transition: no event.
  The lease expiry lives only in the active set's score (one write per renewal).
]]
@include "errors"
@include "now"
@include "job"
@include "lease"

local now = nowMs()
-- Clamped (includes/clamp.lua): a lease never ends past a Node timer's reach.
local lease = now + clamp(ARGV[2], 1, MAX_LEASE_MS, 30000)
local out = {lease}
for i = 3, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local jk = jobKey(ARGV[1], id)
  local f = safeHmget(jk, 's', 'lt', 'cr')
  if f and f[1] == 'active' and f[2] == token and not leaseEnded(KEYS[1], id, now) then
    redis.call('ZADD', KEYS[1], 'XX', int(lease), id)
    out[#out + 1] = (f[3] == '1') and 2 or 1
  else
    out[#out + 1] = ERR_LEASE_LOST
  end
end
return out
