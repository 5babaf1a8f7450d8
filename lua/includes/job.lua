-- Job hash helpers. Field names are short so that a small job stays in
-- Redis's compact listpack encoding; the payload is stored in chunks of at
-- most 64 bytes (the default hash-max-listpack-value) when it is up to 1 KiB,
-- else in one field. Readers get it back whole as field 'p'.
@include "clamp"
local CHUNK = 64
local CHUNKED_MAX = 1024
local VALID_STATES = {waiting = true, delayed = true, active = true, completed = true, failed = true, cancelled = true, blocked = true}

-- The immutable options of a job, packed in one field 'o' = "maxAttempts;timeoutMs;backoff"
-- (fewer fields make the enqueue HSET cheaper and the hash smaller).
local function packOpts(ma, to, bo)
  return ma .. ';' .. to .. ';' .. bo
end

-- Returns maxAttempts (number), timeoutMs (string), backoff (string) from 'o'.
local function unpackOpts(o)
  if not o then return nil, nil, nil end
  local a = string.find(o, ';', 1, true)
  if not a then return nil, nil, nil end
  local b = string.find(o, ';', a + 1, true)
  if not b then return nil, nil, nil end
  return tonumber(string.sub(o, 1, a - 1)), string.sub(o, a + 1, b - 1), string.sub(o, b + 1)
end

local function jobKey(prefix, id)
  return prefix .. 'job:' .. id
end

-- Appends payload fields to an HSET argument list.
local function payloadFields(payload, args)
  local n = #payload
  if n <= CHUNKED_MAX then
    local k = 0
    for i = 1, math.max(n, 1), CHUNK do
      args[#args + 1] = 'p' .. k
      args[#args + 1] = string.sub(payload, i, i + CHUNK - 1)
      k = k + 1
    end
    -- pn (chunk count) is written only when there is more than one chunk.
    if k > 1 then
      args[#args + 1] = 'pn'
      args[#args + 1] = k
    end
  else
    args[#args + 1] = 'p0'
    args[#args + 1] = payload
  end
end

-- Deletes the payload chunks of a job and its chunk count (before writing a
-- new payload: payloadFields writes pn only for more than one chunk).
local function deletePayload(jk)
  local pn = clamp(redis.call('HGET', jk, 'pn'), 1, 1e6, 1)
  local args = {'HDEL', jk, 'pn'}
  for k = 0, pn - 1 do args[#args + 1] = 'p' .. k end
  redis.call(unpack(args))
end

-- HGETALL with payload chunks merged into one 'p' field. Chunk fields are
-- 'p' followed by digits; a byte test is much cheaper than a Lua pattern.
local function readJob(jk)
  local raw = redis.call('HGETALL', jk)
  local out, chunks = {}, {}
  for i = 1, #raw, 2 do
    local k = raw[i]
    local idx = nil
    if string.byte(k, 1) == 112 and #k > 1 then idx = tonumber(string.sub(k, 2)) end
    if idx then
      chunks[idx + 1] = raw[i + 1]
    elseif k ~= 'pn' then
      out[#out + 1] = k
      out[#out + 1] = raw[i + 1]
    end
  end
  out[#out + 1] = 'p'
  out[#out + 1] = table.concat(chunks)
  return out
end

-- The payload of a job, chunks merged. pn and p0 come from the caller's HMGET.
local function readPayload(jk, pn, p0)
  pn = tonumber(pn) or 1
  if pn <= 1 then return p0 or '' end
  local names = {}
  for k = 1, pn - 1 do names[k] = 'p' .. k end
  local rest = redis.call('HMGET', jk, unpack(names))
  for k = 1, #rest do rest[k] = rest[k] or '' end
  return (p0 or '') .. table.concat(rest)
end

-- HMGET that survives a key of the wrong type: returns nil, err instead of
-- aborting the script halfway (Redis does not roll back a failed script).
local function safeHmget(jk, ...)
  local r = redis.pcall('HMGET', jk, ...)
  if type(r) == 'table' and r.err then return nil, r.err end
  return r
end

-- Moves a job that cannot be decoded to the dead-letter queue, whatever its
-- key holds, with a decode error. Never aborts the calling script.
local function deadLetterCorrupt(prefix, failedKey, eventsKey, id, now, from, why)
  local jk = jobKey(prefix, id)
  local t = redis.call('TYPE', jk)
  if type(t) == 'table' then t = t.ok end
  if t ~= 'hash' and t ~= 'none' then redis.call('DEL', jk) end
  local msg = 'decode error: ' .. why
  redis.call('HSET', jk, 's', 'failed', 'e', msg, 'fa', now, 'ua', now)
  redis.call('HDEL', jk, 'lt')
  redis.call('ZADD', failedKey, now, id)
  emit(eventsKey, now, 'failed', id, from, 'failed', redis.call('HGET', jk, 'a') or 0, {'r', 'decode_error', 'er', msg})
end
