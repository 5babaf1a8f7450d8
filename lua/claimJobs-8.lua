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
  elements, only when it carries them.
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
local meta = redis.call('HMGET', KEYS[4], 'paused', 'mc', 'rlMax', 'rlDur', 'ext', 'vr')
-- Not checked against PostgreSQL since Redis restarted: claim nothing yet (answered as paused).
if fenced(meta[6]) then return {1, FENCE_RETRY_MS} end
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

local out = {0, -1}
local claimed = 0
-- Integers as strings for redis.call (see int() in now.lua).
local nowS, leaseS = int(now), int(lease)
local solo = false

-- Claims job id if it is waiting. Returns 'claimed', 'stop' (it must run alone
-- and cannot now: put it back, claim nothing more) or 'skip' (stale or corrupt:
-- dropped). ck: the job's concurrency key (lanes mode), nil otherwise.
local function claimJob(id)
  local jk = jobKey(prefix, id)
  local f, err = safeHmget(jk, 's', 'a', 'x', 'ty', 'o', 'pn', 'p0', 'iso', 'tp', 'ts', 'ck')
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
    redis.call('ZADD', KEYS[3], leaseS, id)
    if f[11] then redis.call('HINCRBY', prefix .. 'kact', f[11], 1) end
    emit(KEYS[5], nowS, 'claimed', id, 'waiting', 'active', aS, {'x', xS, 'w', ARGV[4]})
    claimed = claimed + 1
    local ma, to, bo = unpackOpts(f[5])
    local job = {id, token, lease, f[4] or '', readPayload(jk, f[6], f[7]), a, ma or 0, bo or '', to or '', x}
    if ARGV[7] == '1' then
      job[11] = readJob(jk)
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

local L = lanesCtx(prefix)
if L.on then
  -- Lanes: take the ring's head lane, check its key's limits, pop its best
  -- job, put the lane back (round robin: at the tail). Each step is O(log n)
  -- in jobs and in keys; a lane found blocked leaves the ring (kblk / kpark),
  -- so the work of one call is bounded by n plus the lanes it corrects.
  unparkDue(L, now, 100)
  local budget = n + 200
  local skipped = 0
  local stopped = false
  while claimed < n and budget > 0 do
    budget = budget - 1
    local h = redis.call('ZRANGE', L.ring, 0, 0)[1]
    if not h then break end
    local lk = laneKey(L, h)
    local c, rm, rd = keyLimits(L, h)
    local blocked = false
    if c and (tonumber(redis.call('HGET', L.act, h)) or 0) >= c then
      redis.call('ZREM', L.ring, h)
      redis.call('SADD', prefix .. 'kblk', h)
      blocked = true
    elseif rm then
      local due = rateDue(L, h, rm, rd, now)
      if due then
        redis.call('ZREM', L.ring, h)
        redis.call('ZADD', prefix .. 'kpark', int(due), h)
        blocked = true
      end
    end
    if not blocked then
      local p = redis.call('ZRANGE', lk, 0, 0, 'WITHSCORES')
      if not p[1] then
        redis.call('ZREM', L.ring, h)
      else
        local r = claimJob(p[1])
        if r == 'stop' then
          stopped = true
          if claimed == 0 then out[1] = 6 end
          break
        end
        redis.call('ZREM', lk, p[1])
        redis.call('ZREM', KEYS[1], p[1])
        if r == 'claimed' then
          if rm then rateTake(L, h, rm, rd, now) end
        else
          skipped = skipped + 1
        end
        if redis.call('EXISTS', lk) == 0 then
          redis.call('ZREM', L.ring, h)
        elseif L.rr then
          redis.call('ZADD', L.ring, ringTail(L) + 1, h)
        else
          redis.call('ZADD', L.ring, redis.call('ZRANGE', lk, 0, 0, 'WITHSCORES')[2], h)
        end
        if solo then
          out[1] = 5
          break
        end
      end
    end
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
    if budget <= 0 or claimed < n then out[2] = 0 end
    if skipped > 0 then out[2] = 0 end
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
if claimed > 0 and rlMax then
  redis.call('INCRBY', KEYS[7], claimed)
  boundWindow()
end
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
