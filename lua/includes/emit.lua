-- Appends one audit event to the queue's events stream (the outbox).
-- Fields: e event, j job id, f from, t to, a attempt, at time (ms), then
-- optional extras as a flat list (w worker, x executionSeq, r reason,
-- er error, d data JSON, ...). Called once per transition, inside the same
-- script as the transition, so no change can happen without its event.
local function emit(eventsKey, at, event, jobId, from, to, attempt, extra)
  -- Numbers as strings: see int() in now.lua.
  if type(at) == 'number' then at = int(at) end
  if type(attempt) == 'number' then attempt = int(attempt) end
  local args = {'XADD', eventsKey, '*', 'e', event, 'j', jobId, 'f', from, 't', to, 'a', attempt or '0', 'at', at}
  if extra then
    for i = 1, #extra do args[#args + 1] = extra[i] end
  end
  return redis.call(unpack(args))
end
