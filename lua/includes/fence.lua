-- The restore fence (C27, src/restore/loss-watch.ts). The watch of the audit
-- role writes in each queue's meta hash the run id of the Redis server it
-- checked the queue against PostgreSQL on ('vr'). A Redis that restarted
-- (from an older snapshot, an AOF, or as another node after a failover) has a
-- new run id: until the watch has checked the queue again, nothing is
-- claimed, promoted or reaped there — a snapshot may hold jobs PostgreSQL
-- knows as finished, and running them again would resurrect them. A queue
-- never checked (no 'vr': no audit role, or a Redis that came back empty)
-- is not fenced. Costs one INFO (a few µs) per call once a queue is checked.
local function fenced(vr)
  if not vr then return false end
  local info = redis.call('INFO', 'server')
  return vr ~= (string.match(info, 'run_id:(%w+)') or '')
end

-- How long a fenced caller waits before trying again (ms).
local FENCE_RETRY_MS = 200
