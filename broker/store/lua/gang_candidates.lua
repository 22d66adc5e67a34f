-- Read only: what a gang FETCH is decided over (scheduling/gang_decision.cpp):
-- the queue's forming gang (at most one holds members), the running elastic gangs
-- that may grow, and the head of each gang class the fetching worker may join.
-- Nothing is chosen or written here; claim_gang.lua commits the broker's pick.
-- KEYS (5 + n): 1 gangs (keys.hpp gangs), 2 job prefix, 3 ready prefix, 4 growing
--   elastic gangs (keys.hpp gangs_growing), 5 the queue's config, then the ready set of
--   each gang class the worker may join
-- ARGV: none
-- Reply: {now ms, forming: {} or {id, state, class, gang_workers JSON ('' = none), its
--         first member's same_label value, gang_label, expires_at ('' = none), its ready
--         score ('' = none), tenant}, growing: a list (best first, at most 10) of {id, state,
--         class, gang_workers JSON ('' = none), first member's same_label value,
--         gang_label, gang_max_size, '1' when a rank ACKed else '', score, tenant}, the
--         config's fair_tenants under policy `fair` ('' = another policy: the scores'
--         bands are priority bands), then per class in KEYS order: {} (no waiting job) or {head id, score, expires_at,
--         gang_retry_at, gang_label, tenant} ('' = none). The tenants weigh elastic gangs'
--         shares under `fair` (scheduling/elastic_share.hpp).

-- The first member's value of the gang's same_label ('' = none).
local function first_label(members_json)
  if not members_json then return '' end
  local m = cjson.decode(members_json)[1]
  if type(m) == 'table' and type(m.label) == 'string' then return m.label end
  return ''
end

local out = {int_s(now_ms())}
local forming = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
out[2] = {}
if forming then
  local f = redis.call('HMGET', KEYS[2] .. forming, 'state', 'class', 'gang_workers', 'gang_members', 'gang_label', 'expires_at',
                       'tenant')
  local score = f[2] and redis.call('ZSCORE', KEYS[3] .. f[2], forming)
  out[2] = {forming, f[1] or '', f[2] or '', f[3] or '', first_label(f[4]), f[5] or '', f[6] or '', score or '', f[7] or ''}
end
local growing = {}
local entries = redis.call('ZRANGE', KEYS[4], 0, 9, 'WITHSCORES')
for i = 1, #entries, 2 do
  local id = entries[i]
  local f = redis.call('HMGET', KEYS[2] .. id, 'state', 'class', 'gang_workers', 'gang_members', 'gang_label', 'gang_max_size',
                       'gang_acked', 'tenant')
  growing[#growing + 1] = {id, f[1] or '', f[2] or '', f[3] or '', first_label(f[4]), f[5] or '', f[6] or '',
                           f[7] and '1' or '', entries[i + 1], f[8] or ''}
end
out[3] = growing
local policy = redis.call('HMGET', KEYS[5], 'policy', 'fair_tenants')
out[4] = policy[1] == 'fair' and (policy[2] or '{}') or ''
for k = 6, #KEYS do
  local head = redis.call('ZRANGE', KEYS[k], 0, 0, 'WITHSCORES')
  if head[1] then
    local f = redis.call('HMGET', KEYS[2] .. head[1], 'expires_at', 'gang_retry_at', 'gang_label', 'tenant')
    out[#out + 1] = {head[1], head[2], f[1] or '', f[2] or '', f[3] or '', f[4] or ''}
  else
    out[#out + 1] = {}
  end
end
return out
