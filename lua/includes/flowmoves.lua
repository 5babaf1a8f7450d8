-- The moves a flow's record decides (docs/workflows.md "PostgreSQL, restore,
-- Redis loss"), over every job of the record (`q`) without an outcome in
-- `out`: a 'cancel' job (no 'r' in `pol`) with a dependency whose outcome is
-- 'x' is to cancel; any other whose `left` is 0 or less is to unblock — a job
-- without dependencies included (a root whose `unblocked` Redis lost before
-- the mirror wrote it comes back blocked with nothing to wait for). Jobs
-- with an outcome (completed, ended otherwise, or lost before PostgreSQL
-- heard of them: queue '') are never moved. The caller moves each with
-- lua/moveFlowJobs-7.lua, a no-op on a job not blocked. Returns two flat
-- lists of queue, job id. O(jobs + edges) of the record.
local function flowMoves(base)
  local q = redis.call('HGETALL', base .. 'q')
  local outFlat = redis.call('HGETALL', base .. 'out')
  local out = {}
  for i = 1, #outFlat, 2 do out[outFlat[i]] = outFlat[i + 1] end
  local release, cancel = {}, {}
  for i = 1, #q, 2 do
    local id, dq = q[i], q[i + 1]
    if not out[id] then
      local failed = false
      if redis.call('HGET', base .. 'pol', id) ~= 'r' then
        local d = redis.call('HGET', base .. 'deps', id)
        if d then
          for dep in string.gmatch(d, '[^,]+') do
            if out[dep] == 'x' then failed = true; break end
          end
        end
      end
      if failed then
        cancel[#cancel + 1] = dq; cancel[#cancel + 1] = id
      elseif (tonumber(redis.call('HGET', base .. 'left', id)) or 0) <= 0 then
        release[#release + 1] = dq; release[#release + 1] = id
      end
    end
  end
  return release, cancel
end
