-- Flow control per key (API.md v1.1/v1.2 "Flow control per key"; docs/flow-control.md).
--
-- A queue runs in "lanes mode" once it has had a keyed job or was given key
-- limits, fairness or aging (meta km = '1'). Then every ready job is in the
-- queue's waiting set (the index counts, listings and restores read) AND in
-- exactly one lane: `<base>lane:<key>` for a job with concurrency key <key>
-- (hash field ck), `<base>lane` for a job without one. Lanes are sorted sets
-- scored like the waiting set (priority, then enqueue order), or by
-- readyAt + (100 - priority) * agingMs when the queue ages (laneScore).
--
-- The ring (`<base>ring`, sorted set of lane names; '' = the unkeyed lane)
-- holds the lanes a claim may take from: round robin scores each by its turn
-- (re-inserted at the tail after each job), fifo by its head job's score. A
-- lane leaves the ring while it cannot give a job: empty; at its concurrency
-- limit (then it is in `<base>kblk`, a set, until one of its jobs ends:
-- slotFree); out of rate (then in `<base>kpark`, sorted by when its window
-- frees a start: unparkDue). Every non-empty lane is in the ring, kblk or
-- kpark, so none is forgotten; membership may be stale (a lane in the ring
-- that is blocked), which a claim finds and corrects in O(log n).
--
-- Slots: `<base>kact` (hash key -> active jobs of the key) moves with the
-- active set: +1 when a claim puts a keyed job there, -1 in every script that
-- takes one out (complete, fail, release, reap, prune), only when ZREM on the
-- active set removed it. Rate: `<base>krl:<key>`, a list of the key's last
-- `max` start times (newest first), a sliding window.
-- Counts: `<base>kcnt`, sorted set key -> minus the waiting + active jobs of
-- the key (negated so that the busiest come first and ties by key, ascending)
-- (+1 when a keyed job joins its lane, -1 when one leaves its lane other
-- than by a claim, or leaves the active set), so the busiest keys are read
-- in O(log n) (lua/topKeys-1.lua, which also corrects the entries it reads).
-- Overrides: `<base>kov`, hash key -> "concurrency|rateMax|rateDurationMs"
-- ('' = the queue's applies).
-- Turns mode (meta km = 't'): round robin with no key limits, no aging,
-- one priority, costs a claim what it costs without keys. There are no
-- lanes: each job's waiting-set score carries its key's turn (start-time fair
-- queueing): turn = max(the key's last turn + 1, the turn of the waiting
-- set's head), so a key with a backlog of 100,000 holds turns far ahead
-- while a new key's jobs take the next turns, and the plain claim path
-- (ZPOPMIN) serves the keys in rotation. Score: (100 - priority) * 2^44 +
-- turn (equal turns by job id: UUIDv7, creation order). `<base>kturn` (hash
-- key -> its last turn; '' = unkeyed jobs) loses a key's entry when the key
-- has no job left (countDown); meta kv = the last claimed turn, the base
-- when the waiting set is empty; ksp = the queue's one priority. A queue
-- enters turns mode on its first keyed job when it has no waiting job and
-- nothing that needs lanes; a key limit, an override, aging, fifo or a job
-- of another priority moves it to lanes (rebuildLanes-3.lua 'jobs': kmig,
-- finished by the configure call or the maintenance pass, src/maintenance/
-- lanes.ts); until then claims keep the turns order (another priority
-- runs in its own band).
-- Meta: km lanes mode ('1', or 't' turns), kmig lanes being (re)built (src/redis/stores/lanes.ts),
-- kk a keyed job was seen (default fairness round robin), fm fairness set
-- ('f' | 'r'), ag agingMs, kc keyConcurrency, krm/krd keyRateLimit.
-- Needs: clamp, int (now.lua), waitingScore (score.lua).
@include "now"
@include "score"

-- laneScore's time origin (2026-01-01, ms): keeps the score below 2^53.
local AGING_T0 = 1767225600000
-- Turns mode: a turn is below 2^44 (14 years at 40,000 jobs/s of one key).
local TURN_MAX = 17592186044415
local LANE_CTX = nil

-- The meta fields lanesCtx reads, in its order (a caller that reads meta
-- anyway may read these in the same HMGET and pass them: lanesCtx(prefix, m, i)).
local LANE_FIELDS = {'km', 'kmig', 'kc', 'krm', 'krd', 'fm', 'kk', 'ag', 'kt', 'ksp', 'kv'}

-- The queue's lane settings, read once per script call. m, i: the values of
-- LANE_FIELDS already read, at m[i + 1]... (else read here).
local function lanesCtx(prefix, m, i)
  if LANE_CTX then return LANE_CTX end
  if m then
    local t = {}
    for j = 1, #LANE_FIELDS do t[j] = m[i + j] end
    m = t
  else
    m = redis.call('HMGET', prefix .. 'meta', unpack(LANE_FIELDS))
  end
  LANE_CTX = {
    prefix = prefix,
    on = m[1] == '1',
    tn = m[1] == 't',
    sp = clamp(m[10], -100, 100, 0),
    kv = clamp(m[11], 0, TURN_MAX, 0),
    v = nil, -- turns: the waiting set's head turn, read once per call
    turns = {}, -- turns: key -> last turn, as written in this call
    mig = m[2] == '1',
    kc = clamp(m[3], 1, 1e9, nil),
    krm = clamp(m[4], 1, 1e9, nil),
    krd = clamp(m[5], 1, MAX_WINDOW_MS, 1000),
    rr = m[6] == 'r' or (m[6] ~= 'f' and m[7] == '1'),
    fm = m[6],
    kk = m[7] == '1',
    ag = clamp(m[8], 1, 86400000, nil),
    ring = prefix .. 'ring',
    act = prefix .. 'kact',
    -- Slots are counted (kact) once the queue or a key has had a concurrency
    -- limit (slotsOn); until then a claim and an ack skip that write.
    kt = m[9] == '1',
    blk = nil,
    ov = nil,
  }
  return LANE_CTX
end

local function laneKey(L, k)
  if k == '' then return L.prefix .. 'lane' end
  return L.prefix .. 'lane:' .. k
end

-- A job's score in its lane. Aging: effective priority rises by 1 per agingMs,
-- so ordering by readyAt + (100 - priority) * agingMs ranks by effective
-- priority (then by readyAt); the low 10 bits keep enqueue order within one ms.
local function laneScore(L, pr, sq, readyAt)
  if not L.ag then return waitingScore(pr, sq) end
  local t = clamp(readyAt, AGING_T0 - 1e11, MAX_TIME_MS, AGING_T0) - AGING_T0
  return string.format('%d', (t + (100 - clamp(pr, -100, 100, 0)) * L.ag) * 1024 + clamp(sq, 0, 1e15, 0) % 1024)
end

-- The limits of key k: concurrency, rate max, rate window (ms); nil = none.
local function keyLimits(L, k)
  if k == '' then return nil, nil, nil end
  if L.ov == nil then L.ov = redis.call('EXISTS', L.prefix .. 'kov') == 1 end
  local c, rm, rd = L.kc, L.krm, L.krd
  if L.ov then
    local o = redis.call('HGET', L.prefix .. 'kov', k)
    if o then
      local a = string.find(o, '|', 1, true)
      local b = a and string.find(o, '|', a + 1, true)
      if b then
        local oc = clamp(string.sub(o, 1, a - 1), 1, 1e9, nil)
        local orm = clamp(string.sub(o, a + 1, b - 1), 1, 1e9, nil)
        if oc then c = oc end
        if orm then
          rm = orm
          rd = clamp(string.sub(o, b + 1), 1, MAX_WINDOW_MS, 1000)
        end
      end
    end
  end
  return c, rm, rd
end

-- n jobs (default 1) of key k fewer waiting or active. A key with none left
-- loses its counts entry and its last turn (turns mode: its next job takes
-- the current turn).
local function countDown(L, k, n)
  if (tonumber(redis.call('ZINCRBY', L.prefix .. 'kcnt', n or 1, k)) or 0) >= 0 then
    redis.call('ZREM', L.prefix .. 'kcnt', k)
    if L.tn then redis.call('HDEL', L.prefix .. 'kturn', k) end
  end
end

-- A waiting-set score in turns mode, and the turn of one.
local function turnScore(pr, turn)
  return string.format('%d', (100 - clamp(pr, -100, 100, 0)) * SEQ_SPAN + clamp(turn, 0, TURN_MAX, 0))
end
local function turnOf(score)
  return math.floor((tonumber(score) or 0) % SEQ_SPAN)
end

-- Starts counting slots: kact is recounted from the active set in this same
-- step (O(active jobs)), so a limit set right after holds exactly.
local function slotsOn(L)
  if L.kt then return end
  redis.call('DEL', L.act)
  for _, id in ipairs(redis.call('ZRANGE', L.prefix .. 'active', 0, -1)) do
    local ck = redis.call('HGET', L.prefix .. 'job:' .. id, 'ck')
    if ck then redis.call('HINCRBY', L.act, ck, 1) end
  end
  redis.call('HSET', L.prefix .. 'meta', 'kt', '1')
  L.kt = true
end

local function ringTail(L)
  local t = redis.call('ZRANGE', L.ring, -1, -1, 'WITHSCORES')
  return tonumber(t[2]) or 0
end

-- Puts lane k (non-empty) in the ring if it is not there: round robin at the
-- tail, fifo at its head job's score.
local function ringAdd(L, k, lk)
  if L.rr then
    if not redis.call('ZSCORE', L.ring, k) then redis.call('ZADD', L.ring, ringTail(L) + 1, k) end
  else
    local h = redis.call('ZRANGE', lk, 0, 0, 'WITHSCORES')
    if h[2] then redis.call('ZADD', L.ring, h[2], k) end
  end
end

-- Copies the unkeyed waiting jobs into the unkeyed lane and turns lanes mode
-- on: the first keyed job of a queue. Not while the lanes are being rebuilt
-- (kmig: the rebuild puts every job in its lane, and turns the mode on).
local function lanesOn(L)
  if L.on then return end
  L.rr = L.fm ~= 'f'
  L.kk = true
  if not L.mig then
    -- (With aging set but no rebuild run, these keep the plain order until
    -- the next rebuild: nothing is lost, the order is approximate.)
    local lk = laneKey(L, '')
    if redis.call('ZUNIONSTORE', lk, 1, L.prefix .. 'waiting') > 0 then ringAdd(L, '', lk) end
    redis.call('HSET', L.prefix .. 'meta', 'km', '1', 'kk', '1')
    L.on = true
  else
    redis.call('HSET', L.prefix .. 'meta', 'kk', '1')
  end
end

-- Adds job id (already in the waiting set) to its lane. readyAt: when it
-- became ready (ms), used by aging only. Returns true when its lane joined the ring.
local function laneAdd(L, k, id, score, uncounted)
  local lk = laneKey(L, k)
  if redis.call('ZADD', lk, score, id) == 1 and k ~= '' and not uncounted then redis.call('ZINCRBY', L.prefix .. 'kcnt', -1, k) end
  if redis.call('ZCARD', lk) == 1 then
    ringAdd(L, k, lk)
    return true
  end
  if not L.rr and redis.call('ZSCORE', L.ring, k) then redis.call('ZADD', L.ring, 'XX', 'LT', score, k) end
  return false
end

-- The queue's first keyed job (priority pr): turns mode when nothing needs
-- lanes and no job waits (their plain scores would not compare with turns),
-- else lanes mode.
local function keyedOn(L, waitingKey, pr)
  if not L.mig and L.fm ~= 'f' and not L.kc and not L.krm and not L.ag
    and redis.call('EXISTS', L.prefix .. 'kov') == 0 and redis.call('ZCARD', waitingKey) == 0 then
    L.sp = clamp(pr, -100, 100, 0)
    redis.call('HSET', L.prefix .. 'meta', 'km', 't', 'kk', '1', 'ksp', L.sp)
    L.tn, L.kk, L.rr = true, true, true
  else
    lanesOn(L)
  end
end

-- Turns mode: job id joins the waiting set at its key's next turn: one
-- after the key's last, but never before the turn served now (v: the waiting
-- set's head, or kv when it is empty). A key with no job left starts afresh
-- (countDown drops its last turn; unkeyed jobs: when none waits, meta kun).
-- A job of another priority than the queue's, or a turn at TURN_MAX, starts
-- the move to lanes (kmig).
local function turnReady(L, waitingKey, id, jk, pr, sq, ck)
  if clamp(pr, -100, 100, 0) ~= L.sp and not L.mig then
    redis.call('HSET', L.prefix .. 'meta', 'kmig', '1')
    L.mig = true
  end
  if not L.v then
    local h = redis.call('ZRANGE', waitingKey, 0, 0, 'WITHSCORES')
    L.v = h[2] and turnOf(h[2]) or L.kv
  end
  local k = ck or ''
  local last = L.turns[k]
  if not last then
    -- Clamped: a hand-edited 'nan' or 'inf' must not pin or saturate the key.
    last = clamp(redis.call('HGET', L.prefix .. 'kturn', k), -1, TURN_MAX, -1)
    -- Unkeyed jobs have no counts entry to reset their last turn (countDown):
    -- none waiting (meta kun), they start from the turn served now.
    if not ck and clamp(redis.call('HGET', L.prefix .. 'meta', 'kun'), 0, 1e15, 0) == 0 then last = -1 end
  end
  local turn = math.max(last + 1, L.v)
  if turn >= TURN_MAX and not L.mig then
    redis.call('HSET', L.prefix .. 'meta', 'kmig', '1')
    L.mig = true
  end
  L.turns[k] = turn
  redis.call('HSET', L.prefix .. 'kturn', k, turn)
  if redis.call('ZADD', waitingKey, turnScore(pr, turn), id) == 1 then
    if ck then redis.call('ZINCRBY', L.prefix .. 'kcnt', -1, ck) else redis.call('HINCRBY', L.prefix .. 'meta', 'kun', 1) end
  end
  -- Being moved to lanes: its lane too (counted above, by the waiting set),
  -- scored as makeReady scores it (aging reads when it became ready).
  if L.mig then
    local ra = nil
    if L.ag then
      local t = redis.call('HMGET', jk, 'ra', 'ca')
      ra = tonumber(t[1]) or tonumber(t[2])
    end
    laneAdd(L, k, id, laneScore(L, pr, sq, ra), true)
  end
end

-- An unkeyed job left the waiting set in turns mode (claimed, cancelled,
-- pruned): one fewer in meta kun (turnReady's bound for unkeyed turns).
local function unkeyedGone(L)
  if (tonumber(redis.call('HINCRBY', L.prefix .. 'meta', 'kun', -1)) or 0) < 0 then redis.call('HSET', L.prefix .. 'meta', 'kun', 0) end
end

-- Makes a job ready: the waiting set, and its lane in lanes mode. jk: the job
-- hash (read for ra/ca only when the queue ages); ck: its concurrency key or nil.
local function makeReady(prefix, waitingKey, id, jk, pr, sq, ck)
  local L = lanesCtx(prefix)
  -- Lanes on first: the copy of the waiting set into the unkeyed lane must
  -- not take this keyed job with it.
  if ck and not L.on and not L.tn then keyedOn(L, waitingKey, pr) end
  if L.tn then return turnReady(L, waitingKey, id, jk, pr, sq, ck) end
  redis.call('ZADD', waitingKey, waitingScore(pr, sq), id)
  if ck and not L.kk then
    -- The queue's first keyed job: fairness defaults to round robin from now on.
    redis.call('HSET', prefix .. 'meta', 'kk', '1')
    L.kk = true
    if L.fm ~= 'f' then L.rr = true end
  end
  if L.on or L.mig then
    local ra = nil
    if L.ag then
      local t = redis.call('HMGET', jk, 'ra', 'ca')
      ra = tonumber(t[1]) or tonumber(t[2])
    end
    laneAdd(L, ck or '', id, laneScore(L, pr, sq, ra))
  end
end

-- Takes a ready job out of its lane (cancel, prune). The waiting set is the
-- caller's; removed: the caller's ZREM took it from there (turns mode counts
-- by the waiting set, lanes mode by the lane).
local function laneRemove(prefix, id, ck, removed)
  local L = lanesCtx(prefix)
  if L.tn then
    if L.mig then redis.call('ZREM', laneKey(L, ck or ''), id) end
    if removed and ck and ck ~= '' then countDown(L, ck) elseif removed then unkeyedGone(L) end
  elseif (L.on or L.mig) and redis.call('ZREM', laneKey(L, ck or ''), id) == 1 and ck and ck ~= '' then countDown(L, ck) end
end

-- n jobs (default 1) of key ck left the active set: their slots come back,
-- and a lane that waited for them rejoins the ring. Returns true when it did
-- (wake a worker).
local function slotFree(prefix, ck, n)
  if not ck or ck == '' then return false end
  local L = lanesCtx(prefix)
  n = n or 1
  if L.kt and redis.call('HINCRBY', L.act, ck, -n) <= 0 then redis.call('HDEL', L.act, ck) end
  countDown(L, ck, n)
  if L.blk == nil then L.blk = redis.call('EXISTS', prefix .. 'kblk') == 1 end
  if L.blk and redis.call('SREM', prefix .. 'kblk', ck) == 1 then
    local lk = laneKey(L, ck)
    if redis.call('EXISTS', lk) == 1 then
      ringAdd(L, ck, lk)
      return true
    end
  end
  return false
end

-- When key k may start another job under its sliding window (ms), or nil now.
local function rateDue(L, k, rm, rd, now)
  local rk = L.prefix .. 'krl:' .. k
  if redis.call('LLEN', rk) < rm then return nil end
  local t = tonumber(redis.call('LINDEX', rk, rm - 1))
  if not t or t + rd <= now then return nil end
  return t + rd
end

-- Records a start of key k at now (ms) in its window.
local function rateTake(L, k, rm, rd, now)
  local rk = L.prefix .. 'krl:' .. k
  redis.call('LPUSH', rk, int(now))
  redis.call('LTRIM', rk, 0, rm - 1)
  redis.call('PEXPIRE', rk, rd)
end

-- Lanes whose rate window has freed a start rejoin the ring (at most max).
local function unparkDue(L, now, max)
  local pk = L.prefix .. 'kpark'
  local due = redis.call('ZRANGEBYSCORE', pk, '-inf', int(now), 'LIMIT', 0, max)
  for _, k in ipairs(due) do
    redis.call('ZREM', pk, k)
    local lk = laneKey(L, k)
    if redis.call('EXISTS', lk) == 1 then ringAdd(L, k, lk) end
  end
end

-- Puts every blocked and parked lane back in the ring (limits changed: the
-- next claims re-check each). At most max lanes of each; returns how many moved.
local function lanesRecheck(L, max)
  local moved = 0
  for _, k in ipairs(redis.call('SRANDMEMBER', L.prefix .. 'kblk', max)) do
    redis.call('SREM', L.prefix .. 'kblk', k)
    local lk = laneKey(L, k)
    if redis.call('EXISTS', lk) == 1 then ringAdd(L, k, lk) end
    moved = moved + 1
  end
  for _, k in ipairs(redis.call('ZRANGE', L.prefix .. 'kpark', 0, max - 1)) do
    redis.call('ZREM', L.prefix .. 'kpark', k)
    local lk = laneKey(L, k)
    if redis.call('EXISTS', lk) == 1 then ringAdd(L, k, lk) end
    moved = moved + 1
  end
  return moved
end
