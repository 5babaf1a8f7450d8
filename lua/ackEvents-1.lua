--[[
  ackEvents: the audit writer's acknowledgement of a committed batch: XACK the
  entries, then remove them from the stream, so that what is left in the
  stream is exactly what is not mirrored yet (XLEN = backlog, the first entry
  = the lag, waitForMirror).

  KEYS[1] events stream
  ARGV[1] consumer group   ARGV[2] greatest id of ARGV[4..]
  ARGV[3] the id right after it (<ms>-<seq+1>)   ARGV[4..] entry ids
  Returns 1 when the entries were trimmed, 0 when they were deleted one by one.

  Why a trim: XDEL costs about as much per entry as reading it (it rewrites
  the entry's listpack flags one id at a time), while XTRIM MINID drops whole
  listpack nodes. A trim up to the batch's greatest id is exact when nothing
  older than that id is still pending: every entry of the stream up to it was
  delivered ('>' reads deliver in id order), so an entry not pending is
  acknowledged. That needs the batch's greatest id to be at most the group's
  last-delivered-id: a batch read from an earlier incarnation of the group
  (Redis lost it and it was made again at '0', with entries nobody has read
  yet) does not qualify. When an older entry is still pending (a batch
  retried after a takeover, another writer's claim) or the batch is not
  covered by the group's deliveries, the trim would take unmirrored entries
  with it: XDEL then, one by one.
  Called with at most 1,000 ids (the writer's batch bound; Lua's unpack
  stops near 8,000).
]]
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 4))
local function older(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  -- As decimal strings (no leading zeros: the longer is the greater), exact
  -- for 64-bit parts, which Lua numbers (doubles) are not.
  if #am ~= #bm then return #am < #bm end
  if am ~= bm then return am < bm end
  if #as ~= #bs then return #as < #bs end
  return as < bs
end
local function lastDelivered()
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local f = {}
    for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
    if f['name'] == ARGV[1] then return f['last-delivered-id'] end
  end
  return nil
end
local p = redis.call('XPENDING', KEYS[1], ARGV[1])
local last = lastDelivered()
if last and not older(last, ARGV[2]) and (p[1] == 0 or not older(p[2], ARGV[2])) then
  redis.call('XTRIM', KEYS[1], 'MINID', ARGV[3])
  return 1
end
redis.call('XDEL', KEYS[1], unpack(ARGV, 4))
return 0
