--[[
  claimJobs: pop-plus-lock of up to N ready jobs of one queue.

  KEYS[1] waiting  KEYS[2] delayed  KEYS[3] active  KEYS[4] meta
  KEYS[5] events   KEYS[6] wake     KEYS[7] rate-limit window counter  KEYS[8] failed
  ARGV[1] key prefix   ARGV[2] max jobs   ARGV[3] lease ms   ARGV[4] worker id
  ARGV[5] lock token base (random; token = base .. index .. '.' .. executionSeq:
    the execution lets a repeated complete be recognised after the job left
    Redis, src/core/lock-token.ts)
  ARGV[6] '1' when the caller is an external worker (may claim from external queues)
  ARGV[7] '1' = full jobs (every field, for the API), else lean (what a worker needs)
  ARGV[8] '1' when the caller holds no job right now (it may take a job that must run alone)

  Returns {code, hintMs, job...}: code 0 ok, 1 paused, 2 maxConcurrency reached,
  3 rate limited (hintMs = window left), 1 also while the restore fence
  holds (includes/fence.lua; hintMs = when to try again), 4 external queue (in-process workers
  never claim), 5 solo: the one job returned must run alone (its last lease
  expired: it may be what crashed its worker, so it must not take other jobs
  down with it again), 6 isolate: the next job must run alone and the caller
  holds jobs: claim again once idle (nothing claimed). hintMs otherwise = ms until the next delayed job, or -1;
  0 when popped entries could not be claimed and more may be waiting.
  Each job is {id, lockToken, leaseExpiresAt, type, payload, attempts,
  maxAttempts, backoff, timeoutMs, executionSeq} and, when full, the flat
  fields of the hash (payload merged as 'p') as an 11th element; when lean,
  the job's W3C traceparent (field tp) and tracestate (ts) as 11th and 12th
  elements, only when it carries them ('' each for a flow job without them),
  and for a job of a flow (docs/workflows.md) its dependencies (field dp,
  JSON [{ref, id, queue}]) and flow id 13th and 14th.
  Turns mode (includes/lanes.lua: keyed jobs, round robin, no limits, one
  priority) takes the plain path: the waiting set's scores hold the turns.
  Lanes mode (includes/lanes.lua: keyed jobs, key limits, fairness or aging):
  jobs are taken lane by lane from the ring (round robin or fifo), each
  lane's key under its keyConcurrency (slot +1 in kact) and its sliding-window
  keyRateLimit; hintMs then also covers the soonest parked lane.
  Guarantee: due delayed jobs are promoted first; each claimed job moves
  waiting -> active with attempts+1, executionSeq+1, a fresh token and a lease
  in the active set, and one 'claimed' event. Limits hold across all workers.
]]
@include "errors"
@include "now"
@include "emit"
@include "score"
@include "job"
@include "promote"
@include "wake"
@include "fence"
@include "lanes"

local prefix = ARGV[1]
local now = nowMs()
-- Every number is read and bounded before the first write (see
-- includes/clamp.lua): an error further down would leave jobs active that no
-- caller ever gets, and a rate-limit counter without expiry.
local n = clamp(ARGV[2], 1, 1000, 1)
local lease = now + clamp(ARGV[3], 1, MAX_LEASE_MS, 30000)
-- One read of meta: the claim's own fields, then the lane settings (lanesCtx).
local meta = redis.call('HMGET', KEYS[4], 'paused', 'mc', 'rlMax', 'rlDur', 'ext', 'vr', unpack(LANE_FIELDS))
-- Not checked against PostgreSQL since Redis restarted: claim nothing yet (answered as paused).
if fenced(meta[6]) then return {1, FENCE_RETRY_MS} end
lanesCtx(prefix, meta, 6)
-- A limit that is not a number (a hand-edited hash) is no limit.
local mc = clamp(meta[2], 1, 1e9, nil)
local rlMax = clamp(meta[3], 1, 1e9, nil)
local rlDur = clamp(meta[4], 1, MAX_WINDOW_MS, 1000)

-- The window counter always expires within one window: a counter left
-- without expiry (or with a longer one, by an older version or a longer
-- window set before) would block the queue for good.
local function boundWindow()
  local ttl = redis.call('PTTL', KEYS[7])
  if ttl == -1 or ttl > rlDur then
    redis.call('PEXPIRE', KEYS[7], rlDur)
    return rlDur
  end
  return ttl
end

promoteDue(prefix, KEYS[2], KEYS[1], KEYS[8], KEYS[5], now, 1000)

if meta[5] == '1' and ARGV[6] ~= '1' then return {4, -1} end
if meta[1] == '1' then
  redis.call('DEL', KEYS[6])
  return {1, -1}
end

if mc then
  local free = mc - redis.call('ZCARD', KEYS[3])
  if free <= 0 then
    redis.call('DEL', KEYS[6])
    return {2, -1}
  end
  if free < n then n = free end
end
if rlMax then
  local used = redis.call('GET', KEYS[7])
  if used and not string.match(used, '^%d+$') or used and #used > 15 then
    -- Not a counter INCRBY could add to (hand-edited): start a new window.
    redis.call('DEL', KEYS[7])
    used = nil
  end
  local left = rlMax - (tonumber(used) or 0)
  if left <= 0 then
    local ttl = boundWindow()
    if ttl < 0 then ttl = rlDur end
    return {3, ttl}
  end
  if left < n then n = left end
end

local L = lanesCtx(prefix)
local out = {0, -1}
local claimed = 0
-- The claimed jobs' active-set entries (score, id, ...): one ZADD per call (addActive).
local act = {}
-- Integers as strings for redis.call (see int() in now.lua).
local nowS, leaseS = int(now), int(lease)
local solo = false

-- Claims job id if it is waiting. Returns 'claimed', 'stop' (it must run alone
-- and cannot now: put it back, claim nothing more) or 'skip' (stale or corrupt:
-- dropped). ck: the job's concurrency key (lanes mode), nil otherwise.
local function claimJob(id, noSlot)
  local jk = jobKey(prefix, id)
  local f, err = safeHmget(jk, 's', 'a', 'x', 'ty', 'o', 'pn', 'p0', 'iso', 'tp', 'ts', 'ck', 'dp', 'fl')
  if f and f[1] == 'waiting' and f[8] == '1' then
    -- A job whose lease expired runs alone: only an idle caller takes it, and
    -- takes nothing else with it. Others stop here, keeping the order.
    if claimed == 0 and ARGV[8] == '1' then solo = true else return 'stop' end
  end
  if not f then
    deadLetterCorrupt(prefix, KEYS[8], KEYS[5], id, now, 'waiting', err)
  elseif f[1] == 'waiting' then
    local a = (tonumber(f[2]) or 0) + 1
    local x = (tonumber(f[3]) or 0) + 1
    local aS, xS = int(a), int(x)
    local token = ARGV[5] .. claimed .. '.' .. xS
    if ARGV[6] == '1' then
      -- An external claim records its lease length: a heartbeat that reaches
      -- another api replica renews the same length, not the default.
      redis.call('HSET', jk, 's', 'active', 'a', aS, 'x', xS, 'lt', token, 'w', ARGV[4], 'sa', nowS, 'll', int(lease - now))
    else
      redis.call('HSET', jk, 's', 'active', 'a', aS, 'x', xS, 'lt', token, 'w', ARGV[4], 'sa', nowS)
    end
    act[#act + 1] = leaseS
    act[#act + 1] = id
    -- Slots are counted while the queue has a concurrency limit (lanes.lua kt);
    -- the lanes path counts them once per lane (noSlot).
    if f[11] and L.kt and not noSlot then redis.call('HINCRBY', L.act, f[11], 1) end
    -- emit() inlined (includes/emit.lua: the same entry; ms empty).
    redis.call('XADD', KEYS[5], '*', 'h', 'claimed|waiting|active|' .. aS .. '|' .. nowS .. '|' .. id .. '|' .. xS .. '|', 'w', ARGV[4])
    claimed = claimed + 1
    if not L.on then
      -- The plain path while lanes are being built: the job leaves its lane
      -- too, so no stale entry is counted as waiting or re-added uncounted.
      if L.mig then redis.call('ZREM', laneKey(L, f[11] or ''), id) end
      if L.tn and not f[11] then unkeyedGone(L) end
    end
    local ma, to, bo = unpackOpts(f[5])
    local job = {id, token, lease, f[4] or '', readPayload(jk, f[6], f[7]), a, ma or 0, bo or '', to or '', x}
    if ARGV[7] == '1' then
      job[11] = readJob(jk)
    elseif f[12] then
      -- A flow job: its dependencies (JSON) and flow id 13th and 14th, the
      -- trace context '' when it has none (a Lua array cannot hold a hole).
      job[11] = f[9] or ''
      job[12] = f[10] or ''
      job[13] = f[12]
      job[14] = f[13] or ''
    elseif f[9] then
      job[11] = f[9]
      if f[10] then job[12] = f[10] end
    end
    out[#out + 1] = job
    return 'claimed'
  elseif f[1] and not VALID_STATES[f[1]] then
    deadLetterCorrupt(prefix, KEYS[8], KEYS[5], id, now, 'waiting', 'unknown state')
  elseif not f[1] and redis.call('EXISTS', jk) == 1 then
    deadLetterCorrupt(prefix, KEYS[8], KEYS[5], id, now, 'waiting', 'state missing')
  end
  -- else: a stale entry (job gone or already moved on); dropping it is correct.
  return 'skip'
end

-- The claimed jobs join the active set (before the script returns; nothing
-- in between reads it).
local function addActive()
  if #act > 0 then redis.call('ZADD', KEYS[3], unpack(act)) end
end

if L.on then
  -- Lanes, in passes: a pass reads the ring's first lanes (round robin: as
  -- many as jobs are still wanted; fifo: the best one), checks each key's
  -- limits, pops up to an equal share of the wanted jobs from each lane in
  -- one call, then rotates the served lanes to the ring's tail (one ZADD)
  -- and drops the emptied ones (one ZREM); the waiting set loses every
  -- claimed id in one ZREM per call. A lane found blocked leaves the ring
  -- (kblk / kpark), so the work of one call is bounded by n plus the lanes it
  -- corrects; every step is O(log n) in jobs and in keys.
  unparkDue(L, now, 100)
  local budget = n + 200
  local skipped = 0
  local stopped = false
  local gone = {}
  local tail = nil
  local order = {} -- out index -> rank of the job in its lane's share * 1e6 + lane visit: the answer in turn order
  local visits = 0
  local multi = false
  while claimed < n and budget > 0 and not stopped and not solo do
    local want = n - claimed
    -- The pass's lanes leave the ring (popping its head is cheaper than
    -- re-scoring members in place); each goes back at the tail, to kblk or
    -- kpark, or not at all (empty); unvisited ones go back as they were.
    local popped = redis.call('ZPOPMIN', L.ring, L.rr and want or 1)
    if #popped == 0 then break end
    local heads = {}
    for j = 1, #popped, 2 do heads[#heads + 1] = popped[j] end
    if L.rr and not tail then
      local t = redis.call('ZRANGE', L.ring, -1, -1, 'WITHSCORES')
      tail = math.max(tonumber(t[2]) or 0, tonumber(popped[#popped]) or 0)
    end
    local share = L.rr and math.ceil(want / #heads) or 1
    local rot = {}
    for hi, h in ipairs(heads) do
      if claimed >= n or budget <= 0 or stopped or solo then
        -- Not visited: back in the ring where it was.
        rot[#rot + 1] = popped[2 * hi]
        rot[#rot + 1] = h
      else
        budget = budget - 1
        visits = visits + 1
        local lk = laneKey(L, h)
        local c, rm, rd = keyLimits(L, h)
        local allow = math.min(share, n - claimed)
        local blocked = false
        if c then
          local act = tonumber(redis.call('HGET', L.act, h)) or 0
          if act >= c then
            redis.call('SADD', prefix .. 'kblk', h)
            blocked = true
          elseif c - act < allow then
            allow = c - act
          end
        end
        if not blocked and rm then
          local due = rateDue(L, h, rm, rd, now)
          if due then
            redis.call('ZADD', prefix .. 'kpark', int(due), h)
            blocked = true
          else
            allow = 1 -- the window is checked again before each start
          end
        end
        if not blocked then
          local p = redis.call('ZPOPMIN', lk, allow)
          local got = 0
          local i = 1
          while i <= #p do
            local r = claimJob(p[i], true)
            if r == 'stop' then
              for j = i, #p, 2 do redis.call('ZADD', lk, p[j + 1], p[j]) end
              stopped = true
              if claimed == 0 then out[1] = 6 end
              break
            end
            gone[#gone + 1] = p[i]
            if r == 'claimed' then
              got = got + 1
              order[#out] = got * 1e6 + visits
              if got > 1 then multi = true end
              if rm then rateTake(L, h, rm, rd, now) end
            else
              skipped = skipped + 1
            end
            if solo then
              for j = i + 2, #p, 2 do redis.call('ZADD', lk, p[j + 1], p[j]) end
              out[1] = 5
              break
            end
            i = i + 2
          end
          if got > 0 and L.kt and h ~= '' then redis.call('HINCRBY', L.act, h, got) end
          if stopped then
            -- Its next job must run alone: the lane keeps its place.
            rot[#rot + 1] = popped[2 * hi]
            rot[#rot + 1] = h
          elseif #p > 0 and (#p == 2 * allow or solo) then
            -- Fewer jobs than asked means the lane is empty now: it stays out.
            if L.rr then
              tail = tail + 1
              rot[#rot + 1] = tail
              rot[#rot + 1] = h
            else
              local hd = redis.call('ZRANGE', lk, 0, 0, 'WITHSCORES')
              if hd[2] then
                rot[#rot + 1] = hd[2]
                rot[#rot + 1] = h
              end
            end
          end
        end
      end
    end
    if #rot > 0 then redis.call('ZADD', L.ring, unpack(rot)) end
  end
  if #gone > 0 then redis.call('ZREM', KEYS[1], unpack(gone)) end
  addActive()
  if multi then
    -- Round robin in the answer too: each lane's first job, then the seconds…
    local jobs = {}
    for j = 3, #out do jobs[#jobs + 1] = {out[j], order[j] or 0} end
    table.sort(jobs, function(x, y) return x[2] < y[2] end)
    for j = 1, #jobs do out[j + 2] = jobs[j][1] end
  end
  if claimed > 0 and rlMax then
    redis.call('INCRBY', KEYS[7], claimed)
    boundWindow()
  end
  if stopped or solo then return out end
  if redis.call('ZCARD', L.ring) == 0 then
    -- Nothing claimable now: stale wake tokens go; the next chance is the
    -- soonest delayed job or parked lane (a blocked lane returns with a wake
    -- from the script that frees its slot).
    redis.call('DEL', KEYS[6])
    local hint = nextDelayedIn(KEYS[2], now)
    local park = redis.call('ZRANGE', prefix .. 'kpark', 0, 0, 'WITHSCORES')
    if park[2] then
      local d = math.max(0, tonumber(park[2]) - now)
      if hint < 0 or d < hint then hint = d end
    end
    out[2] = hint
  else
    if budget <= 0 or claimed < n or skipped > 0 then out[2] = 0 end
    wake(KEYS[6])
  end
  return out
end

local popped = redis.call('ZPOPMIN', KEYS[1], n)
local stopAt = nil -- index in popped of the first entry to put back
for i = 1, #popped, 2 do
  local r = claimJob(popped[i])
  if r == 'stop' then
    stopAt = i
    break
  end
  if solo then
    stopAt = i + 2
    break
  end
end
addActive()
if claimed > 0 and rlMax then
  redis.call('INCRBY', KEYS[7], claimed)
  boundWindow()
end
-- Turns mode: the turn served last, where new jobs start once the waiting
-- set is empty (lanes.lua turnReady); one write per call.
if L.tn and #popped > 0 then redis.call('HSET', KEYS[4], 'kv', turnOf(popped[#popped])) end
local taken = #popped
if stopAt then
  for j = stopAt, #popped, 2 do redis.call('ZADD', KEYS[1], popped[j + 1], popped[j]) end
  taken = stopAt - 1
  if solo then out[1] = 5 elseif claimed == 0 then out[1] = 6 end
end
if not stopAt and #popped < 2 * n then
  -- The waiting set is drained: tokens left in the wake list are stale.
  redis.call('DEL', KEYS[6])

  out[2] = nextDelayedIn(KEYS[2], now)
else
  if claimed * 2 < taken then
    -- Some popped entries were dead-lettered or stale, so fewer jobs come back
    -- than asked for while more may be waiting: 0 = claim again now, not after
    -- the caller's idle wait.
    out[2] = 0
  end
  -- The caller took all it could and jobs are still waiting: pass the wake-up
  -- on, so the next idle worker claims them now rather than after its poll
  -- interval (an enqueue pushes one token; each claim hands it on).
  if redis.call('ZCARD', KEYS[1]) > 0 then wake(KEYS[6]) end
end
return out
