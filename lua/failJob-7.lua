--[[
  failJob: ends an attempt that did not succeed.

  KEYS[1] active  KEYS[2] delayed  KEYS[3] waiting  KEYS[4] failed
  KEYS[5] events  KEYS[6] wake     KEYS[7] meta
  ARGV[1] key prefix  ARGV[2] job id  ARGV[3] lock token  ARGV[4] error message
  ARGV[5] '1' retryable | '0' unrecoverable   ARGV[6] backoff delay ms (computed by
  the caller from src/core/backoff.ts; clamped to 0..1 year)  ARGV[7] reason: error | timeout | cancelled | decode_error
  ARGV[8] worker id
  Returns {code, status}: code 1 and the new status (delayed | waiting | failed |
  cancelled), or ERR_LEASE_LOST / ERR_NOT_FOUND.
  Guarantee: fenced by the lock token and the lease (an ended lease,
  includes/lease.lua, answers ERR_LEASE_LOST). Attempts left and retryable -> retry
  ('retry_scheduled'); a pending cancel request -> 'cancelled'; else the
  dead-letter queue ('failed'). Exactly one event.
]]
@include "errors"
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"
@include "lanes"
@include "flowout"
@include "lease"

local prefix, id, token = ARGV[1], ARGV[2], ARGV[3]
local jk = jobKey(prefix, id)
local f = safeHmget(jk, 's', 'lt', 'a', 'o', 'pr', 'sq', 'cr', 'x', 'ck', 'fl')
if not f or not f[1] then return {ERR_NOT_FOUND, ''} end
if f[1] ~= 'active' or f[2] ~= token then return {ERR_LEASE_LOST, f[1]} end

local now = nowMs()
if leaseEnded(KEYS[1], id, now) then return {ERR_LEASE_LOST, f[1]} end
local nowS = int(now)
local a, ma = tonumber(f[3]) or 0, unpackOpts(f[4]) or 1
-- Bounded before any write (includes/clamp.lua): a retry is at most a year
-- ahead, whatever backoff an older version stored.
local delay = clamp(ARGV[6], 0, MAX_DELAY_MS, 0)
local reason, msg = ARGV[7], ARGV[4]
local extra = {'x', f[8], 'w', ARGV[8], 'r', reason, 'er', msg}
local freed = redis.call('ZREM', KEYS[1], id) == 1 and slotFree(prefix, f[9])
redis.call('HDEL', jk, 'lt')
local to
if f[7] == '1' or reason == 'cancelled' then
  to = 'cancelled'
  redis.call('HSET', jk, 's', to, 'e', msg, 'fa', now, 'ua', now)
  emit(KEYS[5], now, 'cancelled', id, 'active', to, a, extra)
  flowOut(prefix, f[10], id, 'x')
elseif ARGV[5] == '1' and a < ma then
  local ra = int(now + delay)
  if delay > 0 then
    to = 'delayed'
    redis.call('HSET', jk, 's', to, 'e', msg, 'ra', ra, 'ua', nowS)
    redis.call('ZADD', KEYS[2], ra, id)
    if redis.call('ZRANGE', KEYS[2], 0, 0)[1] == id then wake(KEYS[6]) end
  else
    to = 'waiting'
    redis.call('HSET', jk, 's', to, 'e', msg, 'ra', nowS, 'ua', nowS)
    makeReady(prefix, KEYS[3], id, jk, f[5], f[6], f[9])
    wake(KEYS[6])
  end
  extra[#extra + 1] = 'ra'; extra[#extra + 1] = ra
  emit(KEYS[5], now, 'retry_scheduled', id, 'active', to, a, extra)
else
  to = 'failed'
  redis.call('HSET', jk, 's', to, 'e', msg, 'fa', now, 'ua', now)
  redis.call('ZADD', KEYS[4], now, id)
  emit(KEYS[5], now, 'failed', id, 'active', to, a, extra)
  flowOut(prefix, f[10], id, 'x')
end
if freed or redis.call('HEXISTS', KEYS[7], 'mc') == 1 and redis.call('ZCARD', KEYS[3]) > 0 then wake(KEYS[6]) end
return {1, to}
