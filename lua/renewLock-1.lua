--[[
  renewLock: extends a lock only if the caller still owns it (compare-and-pexpire).

  KEYS[1] lock key
  ARGV[1] owner id   ARGV[2] ttl ms
  Returns 1 renewed, 0 the lock is gone or held by someone else.
  Guarantee: never extends another owner's lock.
]]
@include "clamp"

if redis.call('GET', KEYS[1]) == ARGV[1] then
  -- Clamped (includes/clamp.lua): PEXPIRE refuses a value past 2^63 ms and
  -- keeps a lock nearly forever below it.
  redis.call('PEXPIRE', KEYS[1], clamp(ARGV[2], 1, MAX_LEASE_MS, 30000))
  return 1
end
return 0
