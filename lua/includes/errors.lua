-- Error codes returned by scripts. Keep in sync with src/core/errors.ts
-- (ScriptErrorCode); errors.spec.ts compares the two files.
local ERR_NOT_FOUND = -1
local ERR_WRONG_STATE = -2
local ERR_LEASE_LOST = -3
local ERR_IDEMPOTENCY_CONFLICT = -4
local ERR_DECODE = -5
-- The queue awaits its check after a Redis restart (includes/fence.lua): try again shortly.
local ERR_RESTORING = -6
