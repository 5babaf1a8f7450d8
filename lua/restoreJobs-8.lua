--[[
  restoreJobs: rebuilds one chunk of a queue's jobs from their PostgreSQL
  copies after Redis lost the queue's data (src/audit/restore.ts drives it,
  chunk by chunk, in the queue's original sequence order).

  KEYS[1] waiting  KEYS[2] delayed  KEYS[3] failed  KEYS[4] events  KEYS[5] wake
  KEYS[6] meta     KEYS[7] epoch marker  KEYS[8] the queue's audit lock
  ARGV[1] key prefix   ARGV[2] lock token (the restorer's value of KEYS[8])
  ARGV[3] lock ttl ms (the lock is renewed to it)
  ARGV[4] epoch: '' for an intermediate chunk; the last call passes the new
          epoch and sets the marker to it
  ARGV[5] lowest acceptable last id of the events stream ("ms-seq", the newest
          entry PostgreSQL holds for the queue) or ''
  ARGV[6] audit consumer group name (created at ARGV[5], or '0', if missing;
          raised to ARGV[5] when behind)
  then 18 fields per job, in sequence order:
    id, kind (waiting | delayed | active | cancel | failed | blocked; cancel =
    active with a pending cancel request; blocked = a flow job waiting for its
    dependencies), type, payload JSON, priority,
    options "maxAttempts;timeoutMs;backoff", attempts, executionSeq,
    createdAt ms, runAt ms, idempotency key|'', last error|'', worker id|'',
    startedAt ms|'', failedAt ms|'', updatedAt ms, concurrency key|'',
    flow|'' = "flowId\npolicy ('c'|'r')\nref\ndependencies JSON [{ref,id,queue}]"
    (as enqueueJobs-5.lua field 14): written as fields fl, fp, rf, dp, so
    the job's end reaches the flow outbox (includes/flowout.lua) and its
    claim carries its dependencies.

  Returns {'ok', waiting, delayed, active, failed, cancelled, skipped, blocked}
  (active = jobs that were active and came back waiting), or {'lock_lost'} /
  {'already_restored'} with nothing written.
  Guarantee: fenced by the audit lock, refused once the epoch marker exists;
  a job whose hash exists is never touched (skipped), so a chunk replayed or a
  queue restored twice changes nothing the second time. New waiting/delayed
  jobs get fresh sequence numbers in argument order (FIFO kept within a
  priority); delayed jobs keep their runAt; failed jobs go back to the DLQ set;
  blocked jobs go back to the queue's blocked set (`<base>blocked`, by
  createdAt) with a sequence number and their runAt, for the flow worker or
  the flow restore (src/restore/flow-restore.ts) to release;
  an active job comes back waiting with its attempt refunded and one
  'stalled' event (reason 'restored'), or cancelled ('cancelled', reason
  'restored') when a cancel was pending. The events stream's last id is raised
  to ARGV[5] first, so new events sort after everything PostgreSQL holds.
]]
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"
@include "group"
@include "lanes"
@include "flowspec"

local prefix, token = ARGV[1], ARGV[2]
if redis.call('GET', KEYS[8]) ~= token then return {'lock_lost'} end
if redis.call('EXISTS', KEYS[7]) == 1 then return {'already_restored'} end
redis.call('PEXPIRE', KEYS[8], clamp(ARGV[3], 1, MAX_LEASE_MS, 30000))

-- The mirror writers' consumer group (MKSTREAM creates the stream when
-- missing), positioned at the newest entry PostgreSQL holds: every entry up
-- to ARGV[5] is in PostgreSQL, and a group behind PostgreSQL is how the
-- restore watch (src/restore/loss-watch.ts) tells a rewound Redis.
local g = redis.pcall('XGROUP', 'CREATE', KEYS[4], ARGV[6], ARGV[5] ~= '' and ARGV[5] or '0', 'MKSTREAM')
if type(g) == 'table' and g.err then
  if not string.find(g.err, 'BUSYGROUP', 1, true) then
    return redis.error_reply('restoreJobs: XGROUP CREATE failed: ' .. g.err)
  end
  local last = lastDelivered(KEYS[4], ARGV[6])
  if ARGV[5] ~= '' and last and idLess(last, ARGV[5]) then redis.call('XGROUP', 'SETID', KEYS[4], ARGV[6], ARGV[5]) end
end

if ARGV[5] ~= '' then
  local info = redis.call('XINFO', 'STREAM', KEYS[4])
  local last = '0-0'
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then last = info[i + 1] end
  end
  if idLess(last, ARGV[5]) then
    -- Fails only if entries newer than 'last' exist, which cannot be: keep going.
    redis.pcall('XSETID', KEYS[4], ARGV[5])
  end
end

local FIELDS = 18
local now = nowMs()
local n = {waiting = 0, delayed = 0, active = 0, failed = 0, cancelled = 0, skipped = 0, blocked = 0}
local woke = false
for b = 7, #ARGV, FIELDS do
  local id, kind = ARGV[b], ARGV[b + 1]
  local jk = jobKey(prefix, id)
  if redis.call('EXISTS', jk) == 1 then
    n.skipped = n.skipped + 1
  else
    local ty, payload, pr, o = ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
    local a, x = tonumber(ARGV[b + 6]) or 0, tonumber(ARGV[b + 7]) or 0
    local ca, ra = ARGV[b + 8], ARGV[b + 9]
    -- A time PostgreSQL holds past the Date range (includes/clamp.lua) comes
    -- back at its end: never a score or a field no reader can render.
    ra = int(clamp(ra, 0, MAX_TIME_MS, now))
    local ik, err, w, sa, fa, ua = ARGV[b + 10], ARGV[b + 11], ARGV[b + 12], ARGV[b + 13], ARGV[b + 14], ARGV[b + 15]
    local args = {'HSET', jk, 'ty', ty, 'pr', pr, 'o', o, 'ca', ca}
    if ra ~= ca then args[#args + 1] = 'ra'; args[#args + 1] = ra end
    if x > 0 then args[#args + 1] = 'x'; args[#args + 1] = x end
    if ik ~= '' then args[#args + 1] = 'ik'; args[#args + 1] = ik end
    local ck = ARGV[b + 16]
    if ck == '' then ck = nil end
    if ck then args[#args + 1] = 'ck'; args[#args + 1] = ck end
    if sa ~= '' then args[#args + 1] = 'sa'; args[#args + 1] = sa end
    payloadFields(payload, args)
    local function put(k, v) args[#args + 1] = k; args[#args + 1] = v end
    local fv = ARGV[b + 17]
    if fv and fv ~= '' then
      local spec = parseFlowSpec(fv)
      if not spec then return redis.error_reply('restoreJobs: malformed flow for job ' .. id) end
      put('fl', spec[1]); put('fp', spec[2]); put('rf', spec[3]); put('dp', spec[4])
    end
    local extra = {'r', 'restored'}
    if x > 0 then extra[#extra + 1] = 'x'; extra[#extra + 1] = x end
    if w ~= '' then extra[#extra + 1] = 'w'; extra[#extra + 1] = w end
    if kind == 'failed' then
      put('s', 'failed'); put('a', a); put('fa', fa ~= '' and fa or now)
      if err ~= '' then put('e', err) end
      redis.call(unpack(args))
      redis.call('ZADD', KEYS[3], fa ~= '' and fa or now, id)
      n.failed = n.failed + 1
    elseif kind == 'cancel' then
      -- The client asked to cancel while it ran; the run is gone: it ends cancelled.
      put('s', 'cancelled'); put('a', a); put('fa', now); put('ua', now)
      redis.call(unpack(args))
      emit(KEYS[4], now, 'cancelled', id, 'active', 'cancelled', a, extra)
      n.cancelled = n.cancelled + 1
    else
      local seq = redis.call('HINCRBY', KEYS[6], 'seq', 1)
      put('sq', seq)
      if kind == 'blocked' then
        -- Not ready: the flow restore or the flow worker releases it (lua/moveFlowJobs-7.lua).
        put('s', 'blocked'); put('a', a); put('ua', ua)
        if ra == ca then put('ra', ra) end
        if err ~= '' then put('e', err) end
        redis.call(unpack(args))
        redis.call('ZADD', prefix .. 'blocked', ca, id)
        n.blocked = n.blocked + 1
      elseif kind == 'delayed' then
        put('s', 'delayed'); put('a', a); put('ua', ua)
        if ra == ca then put('ra', ra) end
        if err ~= '' then put('e', err) end
        redis.call(unpack(args))
        redis.call('ZADD', KEYS[2], ra, id)
        n.delayed = n.delayed + 1
      elseif kind == 'active' then
        -- Redis lost the run, not the job: the attempt is refunded (as on release).
        local refunded = math.max(a - 1, 0)
        local msg = 'restored from PostgreSQL after Redis lost its data while attempt ' .. a .. ' ran'
        put('s', 'waiting'); put('a', refunded); put('e', msg); put('ua', now)
        redis.call(unpack(args))
        makeReady(ARGV[1], KEYS[1], id, jk, pr, seq, ck)
        extra[#extra + 1] = 'er'; extra[#extra + 1] = msg
        emit(KEYS[4], now, 'stalled', id, 'active', 'waiting', refunded, extra)
        n.active = n.active + 1
      else
        put('s', 'waiting'); put('a', a); put('ua', ua)
        if err ~= '' then put('e', err) end
        redis.call(unpack(args))
        makeReady(ARGV[1], KEYS[1], id, jk, pr, seq, ck)
        n.waiting = n.waiting + 1
      end
      woke = woke or kind ~= 'blocked'
    end
  end
end
if woke then wake(KEYS[5]) end
if ARGV[4] ~= '' then redis.call('SET', KEYS[7], ARGV[4]) end
return {'ok', n.waiting, n.delayed, n.active, n.failed, n.cancelled, n.skipped, n.blocked}
