--[[
  takeToken: one request's token from a credential's token bucket (per API
  key, shared by every api replica: src/auth/key-rate-limiter.ts).

  KEYS[1] the bucket (<prefix>:ratelimit:key:<key id>), a hash:
          m = milli-tokens left, at = when m was computed (Redis TIME, ms)
  ARGV[1] refill rate, tokens per second (clamped to 1..1,000,000)
  ARGV[2] burst: the bucket's size, tokens (clamped to 1..1,000,000)
  Returns 0 when a token was taken (the request may go on), else the ms until
  one will be there (>= 1; nothing is taken then).

  A full bucket holds burst × 1000 milli-tokens and refills at `rate`
  milli-tokens per ms: integer arithmetic, exact. Time is Redis's, so the
  replicas' clocks do not matter; a clock that steps back refills nothing.
  The key expires once it would be full again: an idle key costs no memory.
]]
@include "now"
local rate = clamp(ARGV[1], 1, 1000000, 1)
local burst = clamp(ARGV[2], 1, 1000000, 1)
local full = burst * 1000
local now = nowMs()
local b = redis.call('HMGET', KEYS[1], 'm', 'at')
local m = tonumber(b[1])
local at = tonumber(b[2])
if not m or not at then
  m = full
else
  local elapsed = now - at
  if elapsed > 0 then m = math.min(full, m + elapsed * rate) end
end
if m < 1000 then
  redis.call('HSET', KEYS[1], 'm', int(m), 'at', int(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil((full - m) / rate) + 1000)
  return math.max(1, math.ceil((1000 - m) / rate))
end
m = m - 1000
redis.call('HSET', KEYS[1], 'm', int(m), 'at', int(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((full - m) / rate) + 1000)
return 0
