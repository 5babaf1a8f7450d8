-- Job hash helpers. Field names are short so that a small job stays in
-- Redis's compact listpack encoding; the payload is stored in chunks of at
-- most 64 bytes (the default hash-max-listpack-value) when it is up to 1 KiB,
-- else in one field. Readers get it back whole as field 'p'.
local CHUNK = 64
local CHUNKED_MAX = 1024
local VALID_STATES = {waiting = true, delayed = true, active = true, completed = true, failed = true, cancelled = true}

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
    args[#args + 1] = 'pn'
    args[#args + 1] = k
  else
    args[#args + 1] = 'p0'
    args[#args + 1] = payload
    args[#args + 1] = 'pn'
    args[#args + 1] = 1
  end
end

-- Deletes the payload chunks of a job (before writing a new payload).
local function deletePayload(jk)
  local pn = tonumber(redis.call('HGET', jk, 'pn') or '0') or 0
  for k = 0, pn - 1 do redis.call('HDEL', jk, 'p' .. k) end
end

-- HGETALL with payload chunks merged into one 'p' field.
local function readJob(jk)
  local raw = redis.call('HGETALL', jk)
  local out, chunks = {}, {}
  for i = 1, #raw, 2 do
    local k = raw[i]
    local idx = string.match(k, '^p(%d+)$')
    if idx then
      chunks[tonumber(idx) + 1] = raw[i + 1]
    elseif k ~= 'pn' then
      out[#out + 1] = k
      out[#out + 1] = raw[i + 1]
    end
  end
  out[#out + 1] = 'p'
  out[#out + 1] = table.concat(chunks)
  return out
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
  redis.call('HDEL', jk, 'lt', 'le')
  redis.call('ZADD', failedKey, now, id)
  emit(eventsKey, now, 'failed', id, from, 'failed', redis.call('HGET', jk, 'a') or 0, {'r', 'decode_error', 'er', msg})
end
