-- Appends one audit event to the queue's events stream (the outbox).
-- Called once per transition, inside the same script as the transition, so
-- no change can happen without its event.
-- Fields: h, the header "event|from|to|attempt|at|jobId|x|ms[||ra]"
-- (at: time, ms; x: executionSeq; ms: the execution's duration; ra: runAt
-- of a retry), then the other extras as a flat list (w worker, r reason,
-- er error, d data JSON, ...). The enqueue script writes its events
-- (enqueued, debounced) inline with the same header plus "|pr|ra|o"
-- (priority, runAt, options).
-- The header packs every field that comes from a fixed vocabulary or is an
-- integer (never a '|'; o, which may hold one, only ever last) into one:
-- each field of an entry costs Redis a listpack element on XADD and two
-- bulk strings in every XREADGROUP reply, and the mirror writer two strings
-- to parse (entryFields in src/audit/projection.ts splits it back).
-- Free-form values (worker ids of external workers, errors, data) stay
-- fields of their own.
local function emit(eventsKey, at, event, jobId, from, to, attempt, extra)
  -- Numbers as strings: see int() in now.lua.
  if type(at) == 'number' then at = int(at) end
  -- A corrupt hash (deadLetterCorrupt) may hold anything as attempt or
  -- executionSeq: never let it into the header, where a '|' would shift
  -- the fields after it.
  attempt = tonumber(attempt)
  attempt = attempt and int(attempt) or '0'
  local x, ms, ra = '', '', ''
  local args = {'XADD', eventsKey, '*', 'h', false}
  if extra then
    for i = 1, #extra, 2 do
      local k, v = extra[i], extra[i + 1]
      if k == 'x' or k == 'ms' or k == 'ra' then
        v = tonumber(v)
        v = v and int(v) or ''
        if k == 'x' then x = v elseif k == 'ms' then ms = v else ra = v end
      else
        args[#args + 1] = k
        args[#args + 1] = v
      end
    end
  end
  local h = event .. '|' .. from .. '|' .. to .. '|' .. attempt .. '|' .. at .. '|' .. jobId .. '|' .. x .. '|' .. ms
  if ra ~= '' then h = h .. '||' .. ra end
  args[5] = h
  return redis.call(unpack(args))
end
