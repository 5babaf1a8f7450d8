--[[
  enqueueJobs: adds jobs to one queue. The jobs come in groups (one group per
  client request; the store coalesces the requests of one event-loop tick
  into one call): each group is atomic, groups are independent.

  KEYS[1] waiting   KEYS[2] delayed   KEYS[3] events   KEYS[4] wake   KEYS[5] meta
  ARGV[1] key prefix of the queue ("<prefix>:{<queue>}:")
  ARGV[2] process default maxAttempts   ARGV[3] process default backoff (encoded)
  ARGV[4] process default timeoutMs     ARGV[5] idempotency TTL (ms)
  ARGV[6] number of groups G, ARGV[7..6+G] number of jobs in each group
  then 11 fields per job, groups in order:
    id, type, payload JSON, priority, delay mode ('d' delayMs | 'a' absolute runAt | ''),
    delay value (ms), maxAttempts|'', backoff|'', timeoutMs|'', idempotency key|'', body hash|''
  Unset options take the queue's defaults (meta dMa/dBo/dTo), then the process's.

  Returns one entry per group: {ERR_IDEMPOTENCY_CONFLICT, index in group} when
  one of its keys was used with another body (nothing of the group written),
  else {1, id, status, replayed (0|1), id, status, replayed, ...}.
  Guarantee: each new job gets exactly one 'enqueued' event carrying its full
  spec; delay is resolved on Redis's clock; groups behave as if run one after
  another (a key first used by an earlier group of the call replays it); a job
  id that already exists is never overwritten (a resent call replays).
]]
@include "errors"
@include "now"
@include "emit"
@include "score"
@include "wake"
@include "job"

local prefix = ARGV[1]
local FIELDS = 11
local now = nowMs()
local meta = redis.call('HMGET', KEYS[5], 'dMa', 'dBo', 'dTo')
local groups = tonumber(ARGV[6])

-- Pass 1: idempotency keys, group by group, so a conflict writes nothing of its group.
local seen = {}      -- key -> {id, hash} committed by an earlier group of this call
local replay = {}    -- job index -> existing id
local conflict = {}  -- group -> index in group
local first = 7 + groups
local base = first
for g = 1, groups do
  local n = tonumber(ARGV[6 + g])
  local mine = {}
  for j = 0, n - 1 do
    local b = base + j * FIELDS
    local key, hash = ARGV[b + 9], ARGV[b + 10]
    -- Redis does not roll back a script that errors halfway: refuse malformed
    -- numbers here, before anything is written (the store validates first).
    if not tonumber(ARGV[b + 3]) or not tonumber(ARGV[b + 5]) then
      return redis.error_reply('enqueueJobs: malformed priority or delay for job ' .. ARGV[b])
    end
    if key ~= '' then
      local existing = mine[key] or seen[key]
      if not existing then
        local v = redis.call('GET', prefix .. 'idem:' .. key)
        if v then
          local sep = string.find(v, '|', 1, true)
          existing = {string.sub(v, 1, sep - 1), string.sub(v, sep + 1)}
        end
      end
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

-- Pass 2: write.
local out = {}
local woke = false
base = first
for g = 1, groups do
  local n = tonumber(ARGV[6 + g])
  if conflict[g] then
    out[g] = {ERR_IDEMPOTENCY_CONFLICT, conflict[g]}
  else
    local res = {1}
    for j = 0, n - 1 do
      local b = base + j * FIELDS
      local id = replay[b] or ARGV[b]
      local jk = jobKey(prefix, id)
      if replay[b] or redis.call('EXISTS', jk) == 1 then
        res[#res + 1] = id; res[#res + 1] = redis.call('HGET', jk, 's') or 'unknown'; res[#res + 1] = 1
      else
        local priority = ARGV[b + 3]
        local seq = redis.call('HINCRBY', KEYS[5], 'seq', 1)
        local ma = ARGV[b + 6] ~= '' and ARGV[b + 6] or (meta[1] or ARGV[2])
        local bo = ARGV[b + 7] ~= '' and ARGV[b + 7] or (meta[2] or ARGV[3])
        local to = ARGV[b + 8] ~= '' and ARGV[b + 8] or (meta[3] or ARGV[4])
        local runAt = now
        if ARGV[b + 4] == 'd' then runAt = now + tonumber(ARGV[b + 5])
        elseif ARGV[b + 4] == 'a' then runAt = math.max(now, tonumber(ARGV[b + 5])) end
        local state = 'waiting'
        if runAt > now then state = 'delayed' end
        local o = packOpts(ma, to, bo)
        -- attempts/executionSeq default to 0, runAt to createdAt, updatedAt to the latest timestamp.
        local args = {'HSET', jk, 's', state, 'ty', ARGV[b + 1], 'pr', priority, 'sq', seq, 'o', o, 'ca', now}
        if runAt ~= now then args[#args + 1] = 'ra'; args[#args + 1] = runAt end
        local key = ARGV[b + 9]
        if key ~= '' then
          args[#args + 1] = 'ik'; args[#args + 1] = key
          redis.call('SET', prefix .. 'idem:' .. key, id .. '|' .. ARGV[b + 10], 'PX', ARGV[5])
        end
        payloadFields(ARGV[b + 2], args)
        redis.call(unpack(args))
        if state == 'waiting' then
          redis.call('ZADD', KEYS[1], waitingScore(priority, seq), id)
          woke = true
        else
          redis.call('ZADD', KEYS[2], runAt, id)
          -- A new earliest delayed job must shorten the blocked workers' timeout.
          if redis.call('ZRANGE', KEYS[2], 0, 0)[1] == id then woke = true end
        end
        local extra = {'ty', ARGV[b + 1], 'p', ARGV[b + 2], 'pr', priority, 'o', o, 'ra', runAt}
        if key ~= '' then extra[#extra + 1] = 'ik'; extra[#extra + 1] = key end
        emit(KEYS[3], now, 'enqueued', id, '', state, 0, extra)
        res[#res + 1] = id; res[#res + 1] = state; res[#res + 1] = 0
      end
    end
    out[g] = res
  end
  base = base + n * FIELDS
end
if woke then wake(KEYS[4]) end
return out
