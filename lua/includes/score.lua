-- Waiting-set score: priority first (higher runs first), then the per-queue
-- sequence so equal priorities stay FIFO and a requeued job keeps its place.
-- (100 - priority) is 0..200 and seq < 2^44, so the score stays below 2^53
-- and is exact as a double. '%d' (a C long) avoids Lua's lossy %.14g
-- formatting, and is several times cheaper than '%.0f' (see int() in now.lua).
local SEQ_SPAN = 17592186044416 -- 2^44
local function waitingScore(priority, seq)
  return string.format('%d', (100 - tonumber(priority)) * SEQ_SPAN + tonumber(seq))
end
