-- Bounds of the numbers the scripts compute with (docs/configuration.md, "Limits"). The API
-- refuses anything outside them (src/core/job-options.ts LIMITS), so these
-- clamps only catch what got in some other way (an older version, a
-- hand-edited key, a caller's bug): a time past them would overflow the C
-- long of '%d' and PostgreSQL, a NaN score sorts nowhere, a PEXPIRE of 1e20
-- is an error, and a script error after a write does not roll back the
-- writes before it. So every such number is clamped before it is used, and
-- before the script's first write where it can be.
-- Times (epoch ms) stay within a JavaScript Date: 8.64e15 < 2^53, exact as a
-- double and as '%d'.
local MAX_TIME_MS = 8640000000000000
-- Delays (a job's delayMs, a retry's backoff): one year, as API.md bounds delayMs.
local MAX_DELAY_MS = 31536000000
-- Leases: at most a Node timer's 2^31-1 ms (LOCK_TTL_MS, a claim's leaseMs).
local MAX_LEASE_MS = 2147483647
-- A rate-limit window: one day (the API's bound of rateLimit.durationMs).
local MAX_WINDOW_MS = 86400000

-- n (a number or a numeric string) as an integer within [lo, hi]; nil, a
-- non-number or NaN gives def. Never errors.
local function clamp(n, lo, hi, def)
  n = tonumber(n)
  if not n or n ~= n then return def end
  if n <= lo then return lo end
  if n >= hi then return hi end
  return math.floor(n)
end
