-- Writes a flow's record (docs/workflows.md "Redis layout"): q, deps, dnts,
-- refs, pol, left (= number of dependencies) and meta (nc = nx = 0), from n
-- jobs in ARGV starting at `first`, `stride` fields apart, each job's first
-- five fields being: job id, queue, policy ('c'|'r'), dependencies as job
-- ids joined by ',' ('' none), ref ('' none). Used by lua/recordFlow-1.lua
-- and lua/restoreFlow-1.lua. createdAt: ms.
local function writeFlowRecord(base, metaKey, project, n, first, stride, createdAt)
  local q, deps, dnts, left, pol, refs = {}, {}, {}, {}, {}, {}
  for i = 0, n - 1 do
    local b = first + i * stride
    local id, queue, p, d, ref = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
    q[#q + 1] = id; q[#q + 1] = queue
    if ref and ref ~= '' then refs[#refs + 1] = id; refs[#refs + 1] = ref end
    local count = 0
    if d ~= '' then
      deps[#deps + 1] = id; deps[#deps + 1] = d
      for dep in string.gmatch(d, '[^,]+') do
        count = count + 1
        -- A list per dependency, joined once at the end: appending to a string
        -- copies it each time (quadratic: a 1,000-job complete DAG held Redis 20 s).
        local list = dnts[dep]
        if not list then list = {}; dnts[dep] = list end
        list[#list + 1] = id
      end
    end
    left[#left + 1] = id; left[#left + 1] = count
    if p == 'r' then pol[#pol + 1] = id; pol[#pol + 1] = 'r' end
  end
  local function hset(key, flat)
    -- In slices: Lua's unpack stops near 8,000 values.
    for i = 1, #flat, 2000 do
      redis.call('HSET', key, unpack(flat, i, math.min(#flat, i + 1999)))
    end
  end
  hset(base .. 'q', q)
  if #deps > 0 then hset(base .. 'deps', deps) end
  local dn = {}
  for id, list in pairs(dnts) do dn[#dn + 1] = id; dn[#dn + 1] = table.concat(list, ',') end
  if #dn > 0 then hset(base .. 'dnts', dn) end
  hset(base .. 'left', left)
  if #pol > 0 then hset(base .. 'pol', pol) end
  if #refs > 0 then hset(base .. 'refs', refs) end
  redis.call('HSET', metaKey, 'project', project, 'n', n, 'createdAt', int(createdAt), 'nc', 0, 'nx', 0)
end
