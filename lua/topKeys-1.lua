--[[
  topKeys: the busiest concurrency keys of a queue (GET /queues/:name/keys,
  the /metrics top keys).

  KEYS[1] overrides hash (<base>kov)
  ARGV[1] key prefix   ARGV[2] how many (clamped to 1..1000)
  Returns flat entries {key, waiting, active, override or ''}: keys with ready
  or active jobs by waiting + active (descending, then by key), then keys
  that only have an override, at most ARGV[2].
  Reads the counts index (<base>kcnt, includes/lanes.lua, waiting + active
  per key, kept in the same steps as the jobs move): O(log n + limit)
  whatever the number of keys; active = that count - the key's lane. In
  turns mode (no lanes) active is counted from the active set instead (its
  first 10,000 jobs: O(active jobs), bounded) and waiting = count - active.
]]
@include "now"
@include "score"
@include "lanes"

local prefix = ARGV[1]
local limit = clamp(ARGV[2], 1, 1000, 50)
local L = lanesCtx(prefix)
local cnt = prefix .. 'kcnt'
local list = {}
local top = redis.call('ZRANGE', cnt, 0, limit - 1, 'WITHSCORES')
local act = nil -- turns mode: key -> active jobs
if L.tn and #top > 0 then
  act = {}
  for _, id in ipairs(redis.call('ZRANGE', prefix .. 'active', 0, 9999)) do
    local ck = redis.call('HGET', prefix .. 'job:' .. id, 'ck')
    if ck then act[ck] = (act[ck] or 0) + 1 end
  end
end
for i = 1, #top, 2 do
  local k, total = top[i], -(tonumber(top[i + 1]) or 0)
  local w = act and math.max(0, total - (act[k] or 0)) or redis.call('ZCARD', laneKey(L, k))
  if total > 0 then list[#list + 1] = {k, w, math.max(0, total - w)} end
end
table.sort(list, function(x, y)
  local sx, sy = x[2] + x[3], y[2] + y[3]
  if sx ~= sy then return sx > sy end
  return x[1] < y[1]
end)
local out = {}
local n = 0
local listed = {}
for _, e in ipairs(list) do
  if n >= limit then break end
  out[#out + 1] = e[1]; out[#out + 1] = e[2]; out[#out + 1] = e[3]
  out[#out + 1] = redis.call('HGET', KEYS[1], e[1]) or ''
  listed[e[1]] = true
  n = n + 1
end
if n < limit then
  local ov = redis.call('HSCAN', KEYS[1], '0', 'COUNT', limit * 2)[2]
  for i = 1, #ov, 2 do
    if n >= limit then break end
    if not listed[ov[i]] then
      out[#out + 1] = ov[i]; out[#out + 1] = redis.call('ZCARD', laneKey(L, ov[i])); out[#out + 1] = math.max(0, -(tonumber(redis.call('ZSCORE', cnt, ov[i])) or 0) - redis.call('ZCARD', laneKey(L, ov[i])))
      out[#out + 1] = ov[i + 1]
      n = n + 1
    end
  end
end
return out
