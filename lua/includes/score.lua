-- Waiting-set score: priority first (higher runs first), then the per-queue
-- sequence so equal priorities stay FIFO and a requeued job keeps its place.
-- (100 - priority) is 0..200 and seq < 2^44, so the score stays below 2^53
-- and is exact as a double. '%d' (a C long) avoids Lua's lossy %.14g
-- formatting, and is several times cheaper than '%.0f' (see int() in now.lua).
-- Both are clamped (lua/includes/clamp.lua): a priority out of -100..100 or
-- a NaN read from a hand-edited hash must not push the score past 2^53.
@include "clamp"
local SEQ_SPAN = 17592186044416 -- 2^44
local function waitingScore(priority, seq)
  return string.format('%d', (100 - clamp(priority, -100, 100, 0)) * SEQ_SPAN + clamp(seq, 0, SEQ_SPAN - 1, 0))
end
