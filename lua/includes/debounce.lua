-- Debounce (API.md v1.2 "Flow control per key: debounce"; docs/api.md "Debounce").
--
-- Per queue, `<base>deb:<key>` (a string) holds the id of the job that holds
-- debounce key <key>; the job's hash records the key as field dk. The key is
-- held while that job is pending: status waiting or delayed AND never claimed
-- (executionSeq x unset or 0). That is checked lazily, by the enqueue that
-- looks the key up, so no other script needs to know about debounce: a claim
-- frees the key by raising x, a cancel by changing the status, retention by
-- deleting the hash. The x test matters: a job claimed once and back in
-- waiting/delayed (retry, release, stalled) is no longer "not yet claimed".
--
-- Expiry. The pointer is only ever read by an enqueue with the same key, so
-- its TTL only has to outlive its job's pending time. It is set to
-- (runAt - now) + DEB_GRACE_MS at every enqueue that creates or updates the
-- job: it lives a day past the job's latest runAt. It can free the key of a
-- job that still waits only if that job stays unclaimed for more than a day
-- after it became due (paused queue, no workers, a day-long backlog) AND no
-- enqueue with the key came meanwhile (each one refreshes it); the next one
-- then creates a second job. Longer would cost one key per debounced job for
-- longer (a key whose job ran is replaced only when the key is used again).
-- Needs: clamp, int (now.lua).
@include "now"

local DEB_GRACE_MS = 86400000

-- A job's debounce field "windowMs|maxWaitMs|key" (maxWaitMs may be empty;
-- the key goes last: it may hold a '|'), as {key, win, maxw}; maxw nil = no
-- bound. Numbers are clamped (includes/clamp.lua): window 0..MAX_DELAY_MS,
-- maxWait window..MAX_DELAY_MS. Returns nil when the field is malformed.
local function debParse(v)
  local a = string.find(v, '|', 1, true)
  local b = a and string.find(v, '|', a + 1, true)
  if not b or b == #v then return nil end
  local win, mw = tonumber(string.sub(v, 1, a - 1)), string.sub(v, a + 1, b - 1)
  if not win or (mw ~= '' and not tonumber(mw)) then return nil end
  win = clamp(win, 0, MAX_DELAY_MS, 0)
  local maxw = nil
  if mw ~= '' then maxw = clamp(mw, win, MAX_DELAY_MS, win) end
  return {key = string.sub(v, b + 1), win = win, maxw = maxw}
end

-- When a debounced job runs (ms): now + window (the trailing edge), never
-- later than its first enqueue (createdAt ca) + maxWait. That bound may be
-- past (the job was due and not claimed yet): it stays its runAt, and the
-- job is ready at once (the caller's runAt <= now), ready since then.
local function debRunAt(d, now, ca)
  local r = now + d.win
  if d.maxw then
    local cap = (tonumber(ca) or now) + d.maxw
    if cap < r then r = cap end
  end
  return r
end

-- Points the debounce key at job id, until a day past its runAt (see above).
local function debHold(dkey, id, runAt, now)
  redis.call('SET', dkey, id, 'PX', int(runAt - now + DEB_GRACE_MS))
end
