-- Appends one audit event to the queue's events stream (the outbox).
-- Fields: h the header "event|from|to|attempt|at" (at: time, ms), j job id,
-- then optional extras as a flat list (w worker, x executionSeq, r reason,
-- er error, d data JSON, ...). Called once per transition, inside the same
-- script as the transition, so no change can happen without its event.
-- The header packs the five fields every event has, all from a fixed
-- vocabulary or integers (never a '|'), into one: each field of an entry
-- costs Redis a listpack element on XADD and a bulk string in every
-- XREADGROUP reply, and the audit writer one string to parse
-- (entryFields in src/audit/projection.ts splits it back).
local function emit(eventsKey, at, event, jobId, from, to, attempt, extra)
  -- Numbers as strings: see int() in now.lua.
  if type(at) == 'number' then at = int(at) end
  -- A corrupt hash (deadLetterCorrupt) may hold anything as attempt: never
  -- let it into the header, where a '|' would shift the fields after it.
  attempt = tonumber(attempt)
  attempt = attempt and int(attempt) or '0'
  local args = {'XADD', eventsKey, '*', 'h', event .. '|' .. from .. '|' .. to .. '|' .. attempt .. '|' .. at, 'j', jobId}
  if extra then
    for i = 1, #extra do args[#args + 1] = extra[i] end
  end
  return redis.call(unpack(args))
end
