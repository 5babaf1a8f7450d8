--[[
  updateProgress: records a handler's progress and/or log lines.

  KEYS[1] events
  ARGV[1] key prefix  ARGV[2] job id  ARGV[3] lock token  ARGV[4] worker id
  ARGV[5] progress JSON, or '' for none   ARGV[6..] log lines ("level|message")
  Returns 1, or ERR_LEASE_LOST when the caller no longer holds the job (its
  lease ended too: includes/lease.lua; the active set is ARGV[1] .. 'active',
  in the job's slot).
  Guarantee: fenced by the token and the lease. One 'progress' event when progress is given;
  each log line is a 'log' stream entry (routed to job_logs, not job_events).
]]
@include "errors"
@include "now"
@include "emit"
@include "job"
@include "lease"

local jk = jobKey(ARGV[1], ARGV[2])
local f = safeHmget(jk, 's', 'lt', 'a', 'x')
if not f or f[1] ~= 'active' or f[2] ~= ARGV[3] then return ERR_LEASE_LOST end
local now = nowMs()
if leaseEnded(ARGV[1] .. 'active', ARGV[2], now) then return ERR_LEASE_LOST end
if ARGV[5] ~= '' then
  redis.call('HSET', jk, 'pg', ARGV[5], 'ua', now)
  emit(KEYS[1], now, 'progress', ARGV[2], 'active', 'active', f[3], {'x', f[4], 'w', ARGV[4], 'd', ARGV[5]})
end
for i = 6, #ARGV do
  local line = ARGV[i]
  local sep = string.find(line, '|', 1, true)
  redis.call('XADD', KEYS[1], '*', 'e', 'log', 'j', ARGV[2], 'a', f[3], 'at', now,
    'lvl', string.sub(line, 1, sep - 1), 'm', string.sub(line, sep + 1))
end
return 1
