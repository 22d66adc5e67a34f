-- Read only: what a gang FETCH is decided over (scheduling/gang_decision.cpp):
-- the queue's forming gang (at most one holds members) and the head of each gang
-- class the fetching worker may join. Nothing is chosen or written here;
-- claim_gang.lua commits the broker's pick.
-- KEYS (2 + n): 1 gangs (keys.hpp gangs), 2 job prefix, then the ready set of each
--   gang class the worker may join
-- ARGV: none
-- Reply: {now ms, forming: {} or {id, state, class, gang_workers JSON ('' = none), its
--         first member's same_label value, gang_label, expires_at ('' = none)}, then per
--         class in KEYS order: {} (no waiting job) or {head id, score, expires_at,
--         gang_retry_at, gang_label} ('' = none)}
local out = {int_s(now_ms())}
local forming = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
out[2] = {}
if forming then
  local f = redis.call('HMGET', KEYS[2] .. forming, 'state', 'class', 'gang_workers', 'gang_members', 'gang_label', 'expires_at')
  local first = ''
  if f[4] then
    local m = cjson.decode(f[4])[1]
    if type(m) == 'table' and type(m.label) == 'string' then first = m.label end
  end
  out[2] = {forming, f[1] or '', f[2] or '', f[3] or '', first, f[5] or '', f[6] or ''}
end
for k = 3, #KEYS do
  local head = redis.call('ZRANGE', KEYS[k], 0, 0, 'WITHSCORES')
  if head[1] then
    local f = redis.call('HMGET', KEYS[2] .. head[1], 'expires_at', 'gang_retry_at', 'gang_label')
    out[#out + 1] = {head[1], head[2], f[1] or '', f[2] or '', f[3] or ''}
  else
    out[#out + 1] = {}
  end
end
return out
