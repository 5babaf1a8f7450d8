--[[
  takeFlowOutcomes: hands the flow worker (src/flows/flow-worker.ts) the next
  entries of a queue's flow outbox (includes/flowout.lua), keeping each in
  flight under a lease until it is acknowledged (ZREM). Entries whose lease
  ran out (their worker died) go back first, in their order, so nothing a
  dead worker took is lost; applying an entry twice is harmless
  (lua/advanceFlow-1.lua, lua/moveFlowJobs-7.lua act once).

  KEYS[1] flow outbox (list)  KEYS[2] in flight (sorted set: entry -> lease end, ms)
  ARGV[1] at most this many (0..1000; 0 only acknowledges)   ARGV[2] lease (ms, 1,000..600,000)
  ARGV[3..] entries of the caller's previous batch, acknowledged first (done:
    they leave the in-flight set), so a busy flow worker spends one round trip
    per batch on the outbox, not two
  Returns the entries, oldest first.
]]
@include "now"
@include "clamp"

for i = 3, #ARGV, 1000 do
  redis.call('ZREM', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
local now = nowMs()
local max = clamp(ARGV[1], 0, 1000, 100)
if max == 0 then return {} end
local lease = clamp(ARGV[2], 1000, 600000, 30000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', int(now), 'LIMIT', 0, max)
if #expired > 0 then
  -- Back to the head in the order they were written (the entry's n, its fourth field).
  local function seq(e) return tonumber(string.match(e, '^[^|]*|[^|]*|[^|]*|(%d+)')) or 0 end
  table.sort(expired, function(a, b) return seq(a) > seq(b) end)
  for _, e in ipairs(expired) do
    redis.call('ZREM', KEYS[2], e)
    redis.call('LPUSH', KEYS[1], e)
  end
end
local out = redis.call('LPOP', KEYS[1], max)
if not out then return {} end
local until_ = int(now + lease)
for _, e in ipairs(out) do redis.call('ZADD', KEYS[2], until_, e) end
return out
