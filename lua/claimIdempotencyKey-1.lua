--[[
  claimIdempotencyKey: takes an idempotency key for something about to be
  written (a flow: src/redis/stores/flow-keys.ts), before any of it is, so
  that a retry sent while the first request still runs finds the key taken.
  The key and its value are the job idempotency keys' (includes/idem.lua).

  KEYS[1] the key
  ARGV[1] id the key is for   ARGV[2] hash of the request's body   ARGV[3] TTL (ms)
  Returns {0} claimed for ARGV[1]; {1, id} held by id for the same body;
  {ERR_IDEMPOTENCY_CONFLICT, id} held by id for another body.
  Guarantee: of concurrent calls with one key, exactly one claims it.
]]
@include "errors"
@include "idem"

local held = idemRead(KEYS[1])
if held then
  if held[2] == ARGV[2] then return {1, held[1]} end
  return {ERR_IDEMPOTENCY_CONFLICT, held[1]}
end
idemWrite(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return {0}
