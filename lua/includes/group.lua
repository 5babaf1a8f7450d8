-- The last-delivered id of consumer group `group` on stream `key`, or nil
-- when the stream or the group is missing.
local function lastDelivered(key, group)
  if redis.call('EXISTS', key) == 0 then return nil end
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', key)) do
    local name, last = nil, nil
    for i = 1, #g, 2 do
      if g[i] == 'name' then name = g[i + 1] elseif g[i] == 'last-delivered-id' then last = g[i + 1] end
    end
    if name == group then return last end
  end
  return nil
end

-- Stream ids compare as (ms, seq); both parts are exact as doubles.
local function idParts(id)
  local dash = string.find(id, '-', 1, true)
  if not dash then return tonumber(id) or 0, 0 end
  return tonumber(string.sub(id, 1, dash - 1)) or 0, tonumber(string.sub(id, dash + 1)) or 0
end

local function idLess(a, b)
  local am, as = idParts(a)
  local bm, bs = idParts(b)
  return am < bm or (am == bm and as < bs)
end
