-- Idle workers block (BLPOP) on the queue's wake list. One token per push,
-- capped so a queue without workers does not grow the list; scripts that
-- find nothing claimable delete the list, so stale tokens cost at most a few
-- empty claims.
local WAKE_CAP = 16
local function wake(wakeKey)
  if redis.call('LLEN', wakeKey) < WAKE_CAP then
    redis.call('RPUSH', wakeKey, 1)
  end
end
