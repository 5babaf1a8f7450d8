--[[
  enqueueJobs: adds jobs to one queue. The jobs come in groups (one group per
  client request; the store coalesces the requests of one event-loop tick
  into one call): each group is atomic, groups are independent.

  KEYS[1] waiting   KEYS[2] delayed   KEYS[3] events   KEYS[4] wake   KEYS[5] meta
  ARGV[1] key prefix of the queue ("<prefix>:{<queue>}:")
  ARGV[2] process default maxAttempts   ARGV[3] process default backoff (encoded)
  ARGV[4] process default timeoutMs     ARGV[5] idempotency TTL (ms)
  ARGV[6] number of groups G, ARGV[7..6+G] number of jobs in each group, or
    "<count>\n<traceparent>" / "<count>\n<traceparent>\n<tracestate>" when the
    group's request carries a W3C trace context (validated by the caller,
    src/core/trace-context.ts): its jobs store it as fields tp and ts
  then 14 fields per job, groups in order:
    id, type, payload JSON, priority, delay mode ('d' delayMs | 'a' absolute runAt | ''),
    delay value (ms), maxAttempts|'', backoff|'', timeoutMs|'', idempotency key|'', body hash|'',
    concurrency key|'' (field ck; the job joins its key's lane, includes/lanes.lua),
    debounce|'' = "windowMs|maxWaitMs|key" (maxWaitMs may be empty; includes/debounce.lua),
    flow|'' = "flowId\npolicy ('c'|'r')\nref\ndependencies JSON" (docs/workflows.md): the
    job is created `blocked` (fields fl, fp, rf, dp; runAt kept in ra for when it is
    unblocked), in `<base>blocked` by createdAt, not ready and not delayed; its
    'enqueued' event carries fl, fp, rf and dp. Debounce does not apply to it.
  Unset options take the queue's defaults (meta dMa/dBo/dTo), then the process's.

  Debounce: a job with a debounce key whose holder (the job the key points
  to) is still pending — waiting or delayed, never claimed — updates that job
  instead of creating one: type, payload, priority, options, concurrency key
  and trace context become this request's (an option it leaves unset goes
  back to the default, as for a new job), its runAt now + windowMs but no
  later than its createdAt + maxWaitMs; it keeps its id, createdAt and its
  place (sequence) within its priority; one 'debounced' event. Otherwise the
  job is created delayed until now + windowMs and takes the key. The delay
  mode and value of a debounced job are ignored; debounce is ignored on a job
  that carries an idempotency key (the API and the store refuse the pair).
  While the queue is fenced (includes/fence.lua) no job is updated: the key
  goes to a new job, so no request can be lost to a restore.

  Returns one entry per group: {ERR_IDEMPOTENCY_CONFLICT, index in group} when
  one of its keys was used with another body (nothing of the group written),
  else {1, then per job: id, status, flag, createdAt (ms), runAt (ms), packed
  options "maxAttempts;timeoutMs;backoff"} — flag 0 new job, 1 replayed (the
  last three '') — so the caller can answer without reading the job back;
  flag 2: an existing job was updated by debounce (its id, status and
  createdAt, the new runAt and options), followed by a 7th entry, its
  updatedAt (ms).
  Guarantee: each new job gets exactly one 'enqueued' event carrying its full
  spec, each debounce update one 'debounced' event with its new spec; delay
  is resolved on Redis's clock; groups behave as if run one after another (a
  key first used by an earlier group of the call replays it; a debounce key
  taken by an earlier job of the call is updated); a job id that already
  exists is never overwritten, and a debounce update is not applied twice
  (a resent call replays both).
]]
@include "errors"
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"
@include "lanes"
@include "fence"
@include "debounce"
@include "idem"

local prefix = ARGV[1]
local FIELDS = 14
local now = nowMs()
local nowS = int(now)
local meta = redis.call('HMGET', KEYS[5], 'dMa', 'dBo', 'dTo', 'vr', 'paused')
local groups = tonumber(ARGV[6])
-- Group sizes, and the trace context of the groups that carry one.
local counts, tps, tss = {}, {}, {}
for g = 1, groups do
  local v = ARGV[6 + g]
  local n = tonumber(v)
  if not n then
    local a = string.find(v, '\n', 1, true)
    if a then
      n = tonumber(string.sub(v, 1, a - 1))
      local b = string.find(v, '\n', a + 1, true)
      tps[g] = string.sub(v, a + 1, b and b - 1 or -1)
      if b then tss[g] = string.sub(v, b + 1) end
    end
    if not n then return redis.error_reply('enqueueJobs: malformed group entry ' .. g) end
  end
  counts[g] = n
end

-- Pass 1: idempotency keys, group by group, so a conflict writes nothing of its group.
local seen = {}      -- key -> {id, hash} committed by an earlier group of this call
local replay = {}    -- job index -> existing id
local conflict = {}  -- group -> index in group
local debs = {}      -- job index -> parsed debounce (includes/debounce.lua)
local first = 7 + groups
local base = first
for g = 1, groups do
  local n = counts[g]
  local mine = {}
  for j = 0, n - 1 do
    local b = base + j * FIELDS
    local key, hash = ARGV[b + 9], ARGV[b + 10]
    -- Redis does not roll back a script that errors halfway: refuse malformed
    -- numbers here, before anything is written (the store validates first).
    if not tonumber(ARGV[b + 3]) or not tonumber(ARGV[b + 5]) then
      return redis.error_reply('enqueueJobs: malformed priority or delay for job ' .. ARGV[b])
    end
    local dv = ARGV[b + 12]
    local fv = ARGV[b + 13]
    if fv and fv ~= '' then
      if not string.match(fv, '^[^\n]+\n[cr]\n[^\n]+\n%[.*%]$') then
        return redis.error_reply('enqueueJobs: malformed flow for job ' .. ARGV[b])
      end
      dv = nil -- a flow job is never debounced
    end
    if dv and dv ~= '' then
      local d = debParse(dv)
      if not d then return redis.error_reply('enqueueJobs: malformed debounce for job ' .. ARGV[b]) end
      if key == '' then debs[b] = d end
    end
    if key ~= '' then
      local existing = mine[key] or seen[key]
      if not existing then existing = idemRead(prefix .. 'idem:' .. key) end
      if existing then
        if existing[2] ~= hash then
          conflict[g] = j
          break
        end
        replay[b] = existing[1]
      else
        mine[key] = {ARGV[b], hash}
      end
    end
  end
  if not conflict[g] then
    for key, v in pairs(mine) do seen[key] = v end
  end
  base = base + n * FIELDS
end

-- Pass 2: write. The common case (no delay, no key, payload of one chunk)
-- is written with literal argument lists: most of this script's cost is Lua
-- building tables, not the Redis commands themselves.
local out = {}
local woke = false
-- One HINCRBY reserves the sequence numbers of every job to write (a resent
-- job found by EXISTS below leaves a gap, which is harmless).
local toWrite = 0
base = first
for g = 1, groups do
  local n = counts[g]
  if not conflict[g] then
    for j = 0, n - 1 do
      if not replay[base + j * FIELDS] then toWrite = toWrite + 1 end
    end
  end
  base = base + n * FIELDS
end
local seq = 0
if toWrite > 0 then seq = redis.call('HINCRBY', KEYS[5], 'seq', toWrite) - toWrite end
local dMa, dBo, dTo = meta[1] or ARGV[2], meta[2] or ARGV[3], meta[3] or ARGV[4]
local defaultOpts = packOpts(dMa, dTo, dBo)

-- The store sends an integer -100..100; anything else is brought into
-- range (includes/clamp.lua) rather than stored.
local function jobPriority(priority)
  local pn = tonumber(priority)
  if not pn or pn < -100 or pn > 100 or pn ~= math.floor(pn) then return int(clamp(priority, -100, 100, 0)) end
  return priority
end

-- The packed options of job b: its own, else the queue's, else the process's.
local function jobOpts(b)
  if ARGV[b + 6] == '' and ARGV[b + 7] == '' and ARGV[b + 8] == '' then return defaultOpts end
  return packOpts(ARGV[b + 6] ~= '' and ARGV[b + 6] or dMa, ARGV[b + 8] ~= '' and ARGV[b + 8] or dTo, ARGV[b + 7] ~= '' and ARGV[b + 7] or dBo)
end

-- Appends a flow job's fields (fl flow id, fp policy, rf ref, dp dependencies)
-- to an HSET or XADD argument list; fl: {flowId, policy, ref, deps JSON} or nil.
local function flowFields(args, fl)
  if not fl then return end
  local names = {'fl', 'fp', 'rf', 'dp'}
  for i = 1, 4 do
    args[#args + 1] = names[i]
    args[#args + 1] = fl[i]
  end
end

-- Read once per call, and only by a call that finds a debounce holder.
local isFenced = nil

-- The pending job holding debounce d: {id, jk, fields} (fields of hk below),
-- or nil when the key is free (see includes/debounce.lua). A job that this
-- very request item updated before (hash field du = the item's id: the call
-- is a resend) is returned with replay = true, whatever its state.
local function debHolder(d, itemId)
  local hid = redis.call('GET', prefix .. 'deb:' .. d.key)
  if not hid then return nil end
  local hk = jobKey(prefix, hid)
  local f = safeHmget(hk, 's', 'x', 'dk', 'du', 'ca', 'ra', 'o', 'ua', 'ck', 'sq', 'tp')
  if not f or f[3] ~= d.key then return nil end
  if f[4] == itemId then return {id = hid, jk = hk, f = f, replay = true} end
  if (f[1] ~= 'waiting' and f[1] ~= 'delayed') or (tonumber(f[2]) or 0) ~= 0 then return nil end
  if isFenced == nil then isFenced = fenced(meta[4]) end
  if isFenced then return nil end
  return {id = hid, jk = hk, f = f}
end

-- Updates the pending job h with job b of the call (see the header): takes it
-- out of waiting (and its lane) or delayed, rewrites it, puts it where its new
-- runAt says, one 'debounced' event. Returns its new status and runAt, its options.
local function debUpdate(h, b, d, tp, ts)
  local id, jk, f = h.id, h.jk, h.f
  local s, oldCk, ca, sq = f[1], f[9], f[5], f[10]
  local ty, payload, priority = ARGV[b + 1], ARGV[b + 2], jobPriority(ARGV[b + 3])
  local ck = ARGV[b + 11] or ''
  local o = jobOpts(b)
  local runAt = debRunAt(d, now, ca)
  local runAtS = int(runAt)
  local ns = runAt > now and 'delayed' or 'waiting'
  if s == 'waiting' then
    laneRemove(prefix, id, oldCk, redis.call('ZREM', KEYS[1], id) == 1)
  else
    redis.call('ZREM', KEYS[2], id)
  end
  -- Fields this request may not set again: the old concurrency key and trace context.
  deletePayload(jk)
  if oldCk or f[11] then redis.call('HDEL', jk, 'ck', 'tp', 'ts') end
  local args = {'HSET', jk, 's', ns, 'ty', ty, 'pr', priority, 'o', o, 'ra', runAtS, 'ua', nowS, 'du', ARGV[b]}
  if ck ~= '' then args[#args + 1] = 'ck'; args[#args + 1] = ck end
  if tp then
    args[#args + 1] = 'tp'; args[#args + 1] = tp
    if ts then args[#args + 1] = 'ts'; args[#args + 1] = ts end
  end
  payloadFields(payload, args)
  redis.call(unpack(args))
  if ns == 'waiting' then
    makeReady(prefix, KEYS[1], id, jk, priority, sq, ck ~= '' and ck or nil)
    woke = true
  else
    redis.call('ZADD', KEYS[2], runAtS, id)
    if redis.call('ZRANGE', KEYS[2], 0, 0)[1] == id then woke = true end
  end
  debHold(prefix .. 'deb:' .. d.key, id, runAt, now)
  -- Header as the enqueued event's: the job's new priority, runAt and options.
  local tail = '|0|' .. nowS .. '|' .. id .. '|||' .. priority .. '|' .. runAtS .. '|' .. o
  local xa
  if s == 'waiting' then
    xa = {'XADD', KEYS[3], '*', 'h', 'debounced|waiting|' .. ns .. tail, 'ty', ty, 'p', payload}
  else
    xa = {'XADD', KEYS[3], '*', 'h', 'debounced|delayed|' .. ns .. tail, 'ty', ty, 'p', payload}
  end
  if ck ~= '' then xa[#xa + 1] = 'ck'; xa[#xa + 1] = ck end
  redis.call(unpack(xa))
  return ns, runAt, o
end

base = first
for g = 1, groups do
  local n = counts[g]
  if conflict[g] then
    out[g] = {ERR_IDEMPOTENCY_CONFLICT, conflict[g]}
  else
    local res = {1}
    local r = 1
    local tp, ts = tps[g], tss[g]
    for j = 0, n - 1 do
      local b = base + j * FIELDS
      local id = replay[b] or ARGV[b]
      local jk = prefix .. 'job:' .. id
      local d = debs[b]
      local h = nil
      -- Checked per job, not once per call: a call resent after a reconnect
      -- may find some of its jobs already finished and pruned, others live.
      local resent = replay[b] or redis.call('EXISTS', jk) == 1
      if not resent and d then h = debHolder(d, ARGV[b]) end
      if resent then
        res[r + 1] = id; res[r + 2] = redis.call('HGET', jk, 's') or 'unknown'; res[r + 3] = 1
        res[r + 4] = ''; res[r + 5] = ''; res[r + 6] = ''
        r = r + 6
      elseif h then
        -- A resent update (h.replay) answers as the first run did, from the hash.
        local st, runAt, o, ua = h.f[1], tonumber(h.f[6]) or tonumber(h.f[5]), h.f[7], tonumber(h.f[8])
        if not h.replay then
          st, runAt, o = debUpdate(h, b, d, tp, ts)
          ua = now
        end
        res[r + 1] = h.id; res[r + 2] = st; res[r + 3] = 2
        res[r + 4] = tonumber(h.f[5]) or now; res[r + 5] = runAt or now; res[r + 6] = o or defaultOpts; res[r + 7] = ua or now
        r = r + 7
      else
        seq = seq + 1
        local ty, payload, priority, key, ck = ARGV[b + 1], ARGV[b + 2], jobPriority(ARGV[b + 3]), ARGV[b + 9], ARGV[b + 11] or ''
        local o = jobOpts(b)
        local runAt = now
        local mode = ARGV[b + 4]
        -- Clamped (includes/clamp.lua): a delay to one year, an absolute
        -- time to the Date range; past times run now. A debounced job runs
        -- at the window's end.
        if d then runAt = debRunAt(d, now, now)
        elseif mode == 'd' then runAt = now + clamp(ARGV[b + 5], 0, MAX_DELAY_MS, 0)
        elseif mode == 'a' then runAt = clamp(ARGV[b + 5], now, MAX_TIME_MS, now) end
        local state = 'waiting'
        if runAt > now then state = 'delayed' end
        local fv = ARGV[b + 13]
        local fl = nil -- {flowId, policy, ref, deps JSON} of a flow job
        if fv and fv ~= '' then
          local a = string.find(fv, '\n', 1, true)
          local c = string.find(fv, '\n', a + 3, true)
          fl = {string.sub(fv, 1, a - 1), string.sub(fv, a + 1, a + 1), string.sub(fv, a + 3, c - 1), string.sub(fv, c + 1)}
          state = 'blocked'
        end
        -- attempts/executionSeq default to 0, runAt to createdAt, updatedAt to the latest timestamp.
        if runAt == now and key == '' and ck == '' and #payload <= CHUNK and not tp and not d and not fl then
          redis.call('HSET', jk, 's', state, 'ty', ty, 'pr', priority, 'sq', int(seq), 'o', o, 'ca', nowS, 'p0', payload)
        else
          local args = {'HSET', jk, 's', state, 'ty', ty, 'pr', priority, 'sq', int(seq), 'o', o, 'ca', nowS}
          if runAt ~= now then args[#args + 1] = 'ra'; args[#args + 1] = int(runAt) end
          if key ~= '' then
            args[#args + 1] = 'ik'; args[#args + 1] = key
            idemWrite(prefix .. 'idem:' .. key, id, ARGV[b + 10], ARGV[5])
          end
          if ck ~= '' then args[#args + 1] = 'ck'; args[#args + 1] = ck end
          if tp then
            args[#args + 1] = 'tp'; args[#args + 1] = tp
            if ts then args[#args + 1] = 'ts'; args[#args + 1] = ts end
          end
          if d then
            args[#args + 1] = 'dk'; args[#args + 1] = d.key
            debHold(prefix .. 'deb:' .. d.key, id, runAt, now)
          end
          flowFields(args, fl)
          payloadFields(payload, args)
          redis.call(unpack(args))
        end
        if state == 'blocked' then
          redis.call('ZADD', prefix .. 'blocked', nowS, id)
        elseif state == 'waiting' then
          makeReady(prefix, KEYS[1], id, jk, priority, seq, ck ~= '' and ck or nil)
          woke = true
        else
          redis.call('ZADD', KEYS[2], int(runAt), id)
          -- A new earliest delayed job must shorten the blocked workers' timeout.
          if redis.call('ZRANGE', KEYS[2], 0, 0)[1] == id then woke = true end
        end
        -- The enqueued event carries the whole spec: PostgreSQL gets the job from it.
        local runAtS = runAt == now and nowS or int(runAt)
        -- Header as in includes/emit.lua, with priority, runAt and the options
        -- (o may hold a '|': it goes last) after the empty x and ms.
        local tail = '|0|' .. nowS .. '|' .. id .. '|||' .. priority .. '|' .. runAtS .. '|' .. o
        if key == '' and ck == '' and not fl then
          redis.call('XADD', KEYS[3], '*', 'h', 'enqueued||' .. state .. tail, 'ty', ty, 'p', payload)
        else
          local xa = {'XADD', KEYS[3], '*', 'h', 'enqueued||' .. state .. tail, 'ty', ty, 'p', payload}
          if key ~= '' then xa[#xa + 1] = 'ik'; xa[#xa + 1] = key end
          if ck ~= '' then xa[#xa + 1] = 'ck'; xa[#xa + 1] = ck end
          flowFields(xa, fl)
          redis.call(unpack(xa))
        end
        res[r + 1] = id; res[r + 2] = state; res[r + 3] = 0
        res[r + 4] = now; res[r + 5] = runAt; res[r + 6] = o
        r = r + 6
      end
    end
    out[g] = res
  end
  base = base + n * FIELDS
end
-- A paused queue wakes nobody: its claims answer `paused` until resumeQueue, which wakes.
if woke and meta[5] ~= '1' then wake(KEYS[4]) end
return out
