--[[
  topKeys: the busiest concurrency keys of a queue (GET /queues/:name/keys,
  the /metrics top keys).

  KEYS[1] overrides hash (<base>kov)
  ARGV[1] key prefix   ARGV[2] how many (clamped to 1..1000)
  Returns flat entries {key, waiting, active, override or ''}: keys with ready
  or active jobs by waiting + active (descending, then by key), then keys
  that only have an override, at most ARGV[2].
  Reads the counts index (<base>kcnt, includes/lanes.lua): O(log n + limit)
  whatever the number of keys. The entries it reads are recounted from the
  lanes and slots and corrected in the index when they differ (a count can
  only drift through a job hash corrupted by hand), so what it returns is exact.
]]
@include "now"
@include "score"
@include "lanes"

local prefix = ARGV[1]
local limit = clamp(ARGV[2], 1, 1000, 50)
local L = lanesCtx(prefix)
local cnt = prefix .. 'kcnt'
local list = {}
for _, k in ipairs(redis.call('ZREVRANGE', cnt, 0, limit * 2 + 10)) do
  local w = redis.call('ZCARD', laneKey(L, k))
  local a = tonumber(redis.call('HGET', L.act, k)) or 0
  if w + a > 0 then
    list[#list + 1] = {k, w, a}
    redis.call('ZADD', cnt, w + a, k)
  else
    redis.call('ZREM', cnt, k)
  end
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
      out[#out + 1] = ov[i]; out[#out + 1] = redis.call('ZCARD', laneKey(L, ov[i])); out[#out + 1] = tonumber(redis.call('HGET', L.act, ov[i])) or 0
      out[#out + 1] = ov[i + 1]
      n = n + 1
    end
  end
end
return out
