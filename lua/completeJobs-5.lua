--[[
  completeJobs: marks jobs held by one worker completed (batched acks).

  KEYS[1] active  KEYS[2] events  KEYS[3] wake  KEYS[4] meta  KEYS[5] waiting
  ARGV[1] key prefix   ARGV[2] worker id   ARGV[3..] triples: job id, lock token, result JSON
  Returns one code per job: 1 completed, 2 cancelled (a client cancelled the job
  while it ran: the cancel wins, API.md "the job ends cancelled"),
  ERR_LEASE_LOST (stale or wrong token, the job is no longer active, or its
  lease has ended: includes/lease.lua), ERR_NOT_FOUND.
  The same ack sent again with the same token after it landed (its reply was
  lost: a timeout, a reconnect that resent it, a client's retry after a 503)
  answers as the first one did, 1 or 2, and changes nothing: only this script
  leaves the token (`lt`) on a job it ends, every other way out of `active`
  (fail, release, the reaper) deletes it, so a finished job still holding the
  token was finished by that token's ack.
  Guarantee: only the current lease holder completes a job; a late ack after a
  lease expired is refused and its result discarded; one 'completed' event.
]]
@include "errors"
@include "now"
@include "emit"
@include "wake"
@include "job"
@include "lanes"
@include "flowout"
@include "lease"

local now = nowMs()
local nowS = int(now) -- integers as strings for redis.call (see int() in now.lua)
local out = {}
local freed = false -- a key's lane rejoined the ring (lanes.lua slotFree)
local slots = {} -- key -> its jobs that left the active set: freed once per key
-- Jobs without a concurrency key leave the active set in one ZREM per call
-- (nothing reads it in between); a keyed job's own ZREM says whether its slot frees.
local gone = {}
local function leave(id, ck)
  if not ck then
    gone[#gone + 1] = id
  elseif redis.call('ZREM', KEYS[1], id) == 1 then
    slots[ck] = (slots[ck] or 0) + 1
  end
end
for i = 3, #ARGV, 3 do
  local id, token = ARGV[i], ARGV[i + 1]
  local jk = jobKey(ARGV[1], id)
  local f = safeHmget(jk, 's', 'lt', 'a', 'x', 'sa', 'cr', 'ck', 'fl')
  if not f or not f[1] then
    out[#out + 1] = ERR_NOT_FOUND
  elseif f[2] ~= token then
    out[#out + 1] = ERR_LEASE_LOST
  elseif f[1] ~= 'active' then
    -- Already ended by this very token (see the header): a repeated ack.
    if f[1] == 'completed' then out[#out + 1] = 1
    elseif f[1] == 'cancelled' then out[#out + 1] = 2
    else out[#out + 1] = ERR_LEASE_LOST end
  elseif leaseEnded(KEYS[1], id, now) then
    -- Past its lease: the reaper's to move on, whatever this holder says.
    out[#out + 1] = ERR_LEASE_LOST
  elseif f[6] == '1' then
    redis.call('HSET', jk, 's', 'cancelled', 'fa', nowS)
    leave(id, f[7])
    emit(KEYS[2], nowS, 'cancelled', id, 'active', 'cancelled', f[3], {'x', f[4], 'w', ARGV[2], 'r', 'cancel_requested'})
    flowOut(ARGV[1], f[8], id, 'x')
    out[#out + 1] = 2
  else
    -- lt stays: every fenced script also requires s == 'active', so a
    -- leftover token is inert, and not deleting saves a listpack rewrite.
    redis.call('HSET', jk, 's', 'completed', 'r', ARGV[i + 2], 'fa', nowS)
    leave(id, f[7])
    -- emit() inlined (includes/emit.lua: the same entry): attempt and
    -- executionSeq as integers, '0' and '' when the hash holds no number.
    local a, x = tonumber(f[3]), tonumber(f[4])
    redis.call('XADD', KEYS[2], '*', 'h', 'completed|active|completed|' .. (a and int(a) or '0') .. '|' .. nowS .. '|' .. id
      .. '|' .. (x and int(x) or '') .. '|' .. int(now - (tonumber(f[5]) or now)), 'w', ARGV[2], 'd', ARGV[i + 2])
    flowOut(ARGV[1], f[8], id, 'c')
    out[#out + 1] = 1
  end
end
if #gone > 0 then redis.call('ZREM', KEYS[1], unpack(gone)) end
for k, c in pairs(slots) do
  if slotFree(ARGV[1], k, c) then freed = true end
end
-- With a concurrency cap, a finished job frees a slot that idle workers may take.
if freed or redis.call('HEXISTS', KEYS[4], 'mc') == 1 and redis.call('ZCARD', KEYS[5]) > 0 then wake(KEYS[3]) end
return out
