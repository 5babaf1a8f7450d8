--[[
  recordAction: appends one operator-audit record (src/oplog) to the buffer
  stream the flusher moves into PostgreSQL, unless the buffer is full.

  KEYS[1] buffer stream (<prefix>:{oplog}:stream)
  KEYS[2] drop counter (<prefix>:{oplog}:dropped)
  ARGV[1] most records the stream may hold (clamped to 1..10,000,000)
  ARGV[2] the record (JSON text, field `r`)
  Returns 1 when appended; 0 when the stream was full: the record is dropped
  and the counter incremented (the newest record is the one dropped, so what
  was recorded before an outage, or before a flood, stays).

  XLEN counts the records not yet written to PostgreSQL: the flusher deletes
  each record once its row is committed, pending ones included.
]]
@include "clamp"
local cap = clamp(ARGV[1], 1, 10000000, 100000)
if redis.call('XLEN', KEYS[1]) >= cap then
  redis.call('INCR', KEYS[2])
  return 0
end
redis.call('XADD', KEYS[1], '*', 'r', ARGV[2])
return 1
