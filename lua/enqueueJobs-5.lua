--[[
  enqueueJobs: adds one or more jobs to one queue, atomically.

  KEYS[1] waiting   KEYS[2] delayed   KEYS[3] events   KEYS[4] wake   KEYS[5] meta
  ARGV[1] key prefix of the queue ("<prefix>:{<queue>}:")
  ARGV[2] process default maxAttempts   ARGV[3] process default backoff (encoded)
  ARGV[4] process default timeoutMs     ARGV[5] idempotency TTL (ms)
  ARGV[6..] 11 fields per job:
    id, type, payload JSON, priority, delay mode ('d' delayMs | 'a' absolute runAt | ''),
    delay value (ms), maxAttempts|'', backoff|'', timeoutMs|'', idempotency key|'', body hash|''
  Unset options take the queue's defaults (meta dMa/dBo/dTo), then the process's.

  Returns: {ERR_IDEMPOTENCY_CONFLICT, index} when a key was used with another body
  (nothing written), else a flat list per job: id, status, replayed (0|1).
  Guarantee: all jobs of the call or none; each new job gets exactly one
  'enqueued' event carrying its full spec; delay is resolved on Redis's clock.
]]
@include "errors"
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"

local prefix = ARGV[1]
local FIELDS = 11
local now = nowMs()
local meta = redis.call('HMGET', KEYS[5], 'dMa', 'dBo', 'dTo')

-- Pass 1: idempotency keys, so a conflict writes nothing.
local replay = {}
local seenInCall = {}
local count = (#ARGV - 5) / FIELDS
for j = 0, count - 1 do
  local b = 6 + j * FIELDS
  local key, hash = ARGV[b + 9], ARGV[b + 10]
  if key ~= '' then
    local existing = seenInCall[key]
    if not existing then
      local v = redis.call('GET', prefix .. 'idem:' .. key)
      if v then
        local sep = string.find(v, '|', 1, true)
        existing = {string.sub(v, 1, sep - 1), string.sub(v, sep + 1)}
      end
    end
    if existing then
      if existing[2] ~= hash then return {ERR_IDEMPOTENCY_CONFLICT, j} end
      replay[j] = existing[1]
    else
      seenInCall[key] = {ARGV[b], hash}
    end
  end
end

-- Pass 2: write.
local out = {}
local woke = false
for j = 0, count - 1 do
  local b = 6 + j * FIELDS
  local id = ARGV[b]
  if replay[j] then
    local s = redis.call('HGET', jobKey(prefix, replay[j]), 's') or 'unknown'
    out[#out + 1] = replay[j]; out[#out + 1] = s; out[#out + 1] = 1
  else
    local priority = ARGV[b + 3]
    local seq = redis.call('HINCRBY', KEYS[5], 'seq', 1)
    local ma = ARGV[b + 6] ~= '' and ARGV[b + 6] or (meta[1] or ARGV[2])
    local bo = ARGV[b + 7] ~= '' and ARGV[b + 7] or (meta[2] or ARGV[3])
    local to = ARGV[b + 8] ~= '' and ARGV[b + 8] or (meta[3] or ARGV[4])
    local runAt = now
    if ARGV[b + 4] == 'd' then runAt = now + tonumber(ARGV[b + 5])
    elseif ARGV[b + 4] == 'a' then runAt = math.max(now, tonumber(ARGV[b + 5])) end
    local state = 'waiting'
    if runAt > now then state = 'delayed' end
    local args = {'HSET', jobKey(prefix, id), 's', state, 'ty', ARGV[b + 1], 'pr', priority, 'sq', seq,
      'ma', ma, 'a', 0, 'x', 0, 'bo', bo, 'to', to, 'ca', now, 'ra', runAt, 'ua', now}
    local key = ARGV[b + 9]
    if key ~= '' then
      args[#args + 1] = 'ik'; args[#args + 1] = key
      redis.call('SET', prefix .. 'idem:' .. key, id .. '|' .. ARGV[b + 10], 'PX', ARGV[5])
    end
    payloadFields(ARGV[b + 2], args)
    redis.call(unpack(args))
    if state == 'waiting' then
      redis.call('ZADD', KEYS[1], waitingScore(priority, seq), id)
      woke = true
    else
      redis.call('ZADD', KEYS[2], runAt, id)
      -- A new earliest delayed job must shorten the blocked workers' timeout.
      if redis.call('ZRANGE', KEYS[2], 0, 0)[1] == id then woke = true end
    end
    emit(KEYS[3], now, 'enqueued', id, '', state, 0,
      {'ty', ARGV[b + 1], 'p', ARGV[b + 2], 'pr', priority, 'ma', ma, 'bo', bo, 'to', to, 'ik', key, 'ra', runAt})
    out[#out + 1] = id; out[#out + 1] = state; out[#out + 1] = 0
  end
end
if woke then wake(KEYS[4]) end
return out
