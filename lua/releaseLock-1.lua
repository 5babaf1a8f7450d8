--[[
  releaseLock: deletes a lock only if the caller still owns it (compare-and-delete).

  KEYS[1] lock key
  ARGV[1] owner id
  Returns 1 released, 0 the lock is gone or held by someone else.
  Guarantee: never releases another owner's lock.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
