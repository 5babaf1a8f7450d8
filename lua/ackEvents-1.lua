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
  delivered ('>' reads deliver in id order, and this batch's greatest id was
  delivered), so an entry not pending is acknowledged. When an older entry is
  still pending (a batch retried after a takeover, another writer's claim),
  the trim would take unmirrored entries with it: XDEL then, one by one.
]]
local n = redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 4))
local p = redis.call('XPENDING', KEYS[1], ARGV[1])
local oldest = p[2]
local function older(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  -- Stream ids are 64-bit; ms fit in a double exactly (< 2^53), and so does
  -- any sequence number a stream reaches in practice. Compare by length
  -- first so that no precision is needed at all.
  if #am ~= #bm then return #am < #bm end
  if am ~= bm then return am < bm end
  if #as ~= #bs then return #as < #bs end
  return as < bs
end
if p[1] == 0 or not older(oldest, ARGV[2]) then
  redis.call('XTRIM', KEYS[1], 'MINID', ARGV[3])
  return 1
end
redis.call('XDEL', KEYS[1], unpack(ARGV, 4))
return 0
