-- Moves due delayed jobs (runAt <= now) to the waiting set. Returns the count.
-- Needs: jobKey, safeHmget, deadLetterCorrupt, waitingScore, emit, makeReady (lanes.lua).
@include "lanes"
local function promoteDue(prefix, delayedKey, waitingKey, failedKey, eventsKey, now, limit)
  local nowS = int(now) -- see int() in now.lua
  local ids = redis.call('ZRANGEBYSCORE', delayedKey, '-inf', nowS, 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    redis.call('ZREM', delayedKey, id)
    local jk = jobKey(prefix, id)
    local f, err = safeHmget(jk, 's', 'pr', 'sq', 'a', 'ck')
    if not f then
      deadLetterCorrupt(prefix, failedKey, eventsKey, id, now, 'delayed', err)
    elseif f[1] == 'delayed' then
      if tonumber(f[2]) and tonumber(f[3]) then
        redis.call('HSET', jk, 's', 'waiting', 'ua', nowS)
        makeReady(prefix, waitingKey, id, jk, f[2], f[3], f[5])
        emit(eventsKey, nowS, 'promoted', id, 'delayed', 'waiting', f[4])
      else
        deadLetterCorrupt(prefix, failedKey, eventsKey, id, now, 'delayed', 'priority or sequence missing')
      end
    elseif f[1] and not VALID_STATES[f[1]] then
      deadLetterCorrupt(prefix, failedKey, eventsKey, id, now, 'delayed', 'unknown state')
    elseif not f[1] and redis.call('EXISTS', jk) == 1 then
      deadLetterCorrupt(prefix, failedKey, eventsKey, id, now, 'delayed', 'state missing')
    end
    -- a missing key or another valid state means a stale set entry: dropped.
  end
  return #ids
end

-- ms until the earliest delayed job is due (0 if due now), or -1 if none.
local function nextDelayedIn(delayedKey, now)
  local first = redis.call('ZRANGE', delayedKey, 0, 0, 'WITHSCORES')
  if first[2] then
    local d = tonumber(first[2]) - now
    if d < 0 then return 0 end
    return d
  end
  return -1
end
