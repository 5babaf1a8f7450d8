@include "clamp"
-- Time is Redis's: every script reads TIME so skewed host clocks cannot
-- reorder jobs or shorten leases. Returns epoch milliseconds (integer).
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- An integer (ms, counters) as the string Redis stores. A Lua number passed
-- to redis.call is formatted by Redis with snprintf('%.17g'), whose
-- floating-point path was ~17 % of the enqueue script's instructions
-- (callgrind); the integer path of string.format is a fraction of that.
local function int(n)
  return string.format('%d', n)
end
