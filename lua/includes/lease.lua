-- A lease ends at its expiry — the job's score in the active set, epoch ms by
-- Redis's clock (claimJobs, extendLocks) — whether or not the reaper has
-- passed (API.md v1.3): from then on its token may not heartbeat, complete,
-- fail, release or report progress, and the reaper alone moves the job on
-- (stalled: the attempt counts). "Ended" is the reaper's own test, score <= now
-- (reapExpired: ZRANGEBYSCORE -inf now), so no call falls between the two.
-- An active job without a score (none should exist) is not judged here.
local function leaseEnded(activeKey, id, now)
  local expiry = tonumber(redis.call('ZSCORE', activeKey, id))
  return expiry ~= nil and expiry <= now
end
