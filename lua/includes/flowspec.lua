-- A flow job's fields as callers pass them (docs/workflows.md):
-- "flowId\npolicy ('c'|'r')\nref\ndependencies JSON [{ref,id,queue}]".
-- Returns {flowId, policy, ref, deps JSON}, or nil when malformed (the
-- caller refuses before writing anything: Redis does not roll back).
local function parseFlowSpec(fv)
  local f, p, r, d = string.match(fv, '^([^\n]+)\n([cr])\n([^\n]*)\n(%[.*%])$')
  if not f then return nil end
  return {f, p, r, d}
end
