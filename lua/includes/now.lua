-- Time is Redis's: every script reads TIME so skewed host clocks cannot
-- reorder jobs or shorten leases. Returns epoch milliseconds (integer).
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
