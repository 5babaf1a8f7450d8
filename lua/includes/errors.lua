-- Error codes returned by scripts. Keep in sync with src/core/errors.ts
-- (ScriptErrorCode); errors.spec.ts compares the two files.
local ERR_NOT_FOUND = -1
local ERR_WRONG_STATE = -2
local ERR_LEASE_LOST = -3
local ERR_IDEMPOTENCY_CONFLICT = -4
local ERR_DECODE = -5
