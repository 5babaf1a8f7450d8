-- Idempotency keys (API.md: `idempotencyKey` of POST /jobs, per queue, and of
-- POST /flows, per project): a string key holding "<id>|<body hash>" with an
-- expiry of IDEMPOTENCY_TTL_MS. The one reading and writing of that value,
-- for lua/enqueueJobs-5.lua and lua/claimIdempotencyKey-1.lua (the TypeScript
-- side reads it only in src/redis/stores/enqueue.ts's precheck).

-- {id, hash} held by `key`, or nil when it is free.
local function idemRead(key)
  local v = redis.call('GET', key)
  if not v then return nil end
  local sep = string.find(v, '|', 1, true)
  return {string.sub(v, 1, sep - 1), string.sub(v, sep + 1)}
end

-- Gives `key` to `id` for a body of hash `hash`, for `ttlMs` milliseconds.
local function idemWrite(key, id, hash, ttlMs)
  redis.call('SET', key, id .. '|' .. hash, 'PX', ttlMs)
end
