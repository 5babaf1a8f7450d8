--[[
  releaseIdempotencyKey: frees an idempotency key taken by
  claimIdempotencyKey, when what it was taken for is known not to exist (a
  flow rolled back completely): a retry then creates it anew.

  KEYS[1] the key
  ARGV[1] the id it was claimed for
  Returns 1 released, 0 free already or held for another id (left alone).
]]
@include "idem"

local held = idemRead(KEYS[1])
if held and held[1] == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
