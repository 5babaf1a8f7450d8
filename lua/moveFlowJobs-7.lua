--[[
  moveFlowJobs: moves jobs of flows within one queue, as the flow's record
  decided (lua/advanceFlow-1.lua; docs/workflows.md "Release"). Each move
  acts only on a job in the state it expects, so a repeat changes nothing.

  KEYS[1] blocked  KEYS[2] waiting  KEYS[3] delayed  KEYS[4] events
  KEYS[5] wake  KEYS[6] meta  KEYS[7] flow outbox (<base>flowq)
  ARGV[1] key prefix   ARGV[2] op: 'unblock' | 'cancel' | 'reblock'   ARGV[3..] job ids
  - unblock: a blocked job becomes waiting (through its lane, includes/lanes.lua),
    or delayed until its own runAt; event 'unblocked'.
  - cancel: a blocked job is cancelled, reason dependency_failed (field cx);
    event 'cancelled'; its own outcome goes to the flow outbox (includes/flowout.lua),
    so the cancellation goes on down the graph.
  - reblock: a job cancelled for a dependency is blocked again (a DLQ retry of
    that dependency); event 'blocked', reason dependency_retried. A job
    blocked already counts as moved (no event): a repeat goes on down the graph.
  Returns the ids moved; for 'reblock', {ids moved, this queue's time in µs}.
  Guarantee: fenced like every script that moves jobs (includes/fence.lua):
  nothing moves on a queue not checked since Redis restarted, and the caller
  is told so ({ERR_RESTORING}, never an empty answer): an unblock or cancel
  it took for a no-op was lost (the flow worker acknowledged the outcome;
  the dependent stayed blocked for good) — the flow worker now keeps the
  outcome in flight and carries it out again once the queue is checked.
]]
@include "errors"
@include "now"
@include "emit"
@include "job"
@include "fence"
@include "lanes"
@include "wake"
@include "flowout"

if fenced(redis.call('HGET', KEYS[6], 'vr')) then return {ERR_RESTORING} end
local prefix, op = ARGV[1], ARGV[2]
local now = nowMs()
local nowS = int(now)
local moved = {}
local woke = false
for i = 3, #ARGV do
  local id = ARGV[i]
  local jk = jobKey(prefix, id)
  local f = safeHmget(jk, 's', 'a', 'pr', 'sq', 'ck', 'ra', 'fl', 'cx')
  if f and op == 'unblock' and f[1] == 'blocked' then
    redis.call('ZREM', KEYS[1], id)
    local ra = tonumber(f[6]) or 0
    local to = ra > now and 'delayed' or 'waiting'
    redis.call('HSET', jk, 's', to, 'ua', nowS)
    if to == 'delayed' then
      redis.call('ZADD', KEYS[3], int(ra), id)
      if redis.call('ZRANGE', KEYS[3], 0, 0)[1] == id then woke = true end
    else
      makeReady(prefix, KEYS[2], id, jk, f[3], f[4], f[5])
      woke = true
    end
    emit(KEYS[4], nowS, 'unblocked', id, 'blocked', to, f[2])
    moved[#moved + 1] = id
  elseif f and op == 'cancel' and f[1] == 'blocked' then
    redis.call('ZREM', KEYS[1], id)
    redis.call('HSET', jk, 's', 'cancelled', 'cx', 'dependency_failed', 'fa', nowS, 'ua', nowS)
    emit(KEYS[4], nowS, 'cancelled', id, 'blocked', 'cancelled', f[2], {'r', 'dependency_failed'})
    flowOut(prefix, f[7], id, 'x')
    moved[#moved + 1] = id
  elseif f and op == 'reblock' and f[1] == 'cancelled' and f[8] == 'dependency_failed' then
    redis.call('HSET', jk, 's', 'blocked', 'ua', nowS)
    redis.call('HDEL', jk, 'cx', 'fa')
    redis.call('PERSIST', jk) -- kept with an expiry once mirrored (lua/forgetJobs-2.lua)
    redis.call('ZADD', KEYS[1], nowS, id)
    emit(KEYS[4], nowS, 'blocked', id, 'cancelled', 'blocked', f[2], {'r', 'dependency_retried'})
    moved[#moved + 1] = id
  elseif f and op == 'reblock' and f[1] == 'blocked' then
    -- Blocked already (a repeat after the flow worker died midway): answered
    -- as moved, with no second event, so the worker goes on down the graph.
    moved[#moved + 1] = id
  end
end
if woke then wake(KEYS[5]) end
if op == 'reblock' then
  -- With this queue's time (µs, as includes/flowout.lua writes it): the
  -- caller applies each 'r' with it, so a cancellation of the job still in
  -- this queue's outbox (written before) reads as older and is ignored.
  local t = redis.call('TIME')
  return {moved, t[1] .. string.format('%06d', tonumber(t[2]))}
end
return moved
