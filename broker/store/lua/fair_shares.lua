-- [fairorder] The fair shares capacity preemption weighs under `policy: fair` with
-- tenant_fairness.order "tenant" (docs/matching.md#fair-share): each tenant's part
-- of the queue's use, read as the claim reads it (_lib_fairshare.lua fair_config,
-- fair_usage; _lib_accounting.lua usage_share_parts), after folding the journal as
-- the claim does.
-- KEYS (5): 1 usage journal, 2 usage hash, 3 totals, 4 hourly rollup, 5 config
--           (keys.hpp usage_fold_keys)
-- ARGV: 1 'any' = under either fair order (the start estimate orders by them), '' = the
--       tenant order only (preemption's share rule)
-- Reply: {} when the queue's policy is not fair, or ('') its order not the tenant one;
--        else {resource (1 GPUs, 2 CPU cores, 0 nothing used), the queue's held amount,
--        the default weight, the order ('tenant' | 'class'), then per tenant with a
--        weight or a use: name, weight, fraction of the queue's decayed use, amount
--        held}, numbers as text
local rl = redis.call('HMGET', KEYS[5], 'policy', 'usage_half_life_ms')
if rl[1] ~= 'fair' then return {} end
local fc = fair_config(KEYS[5])
if fc.order == 'class' and ARGV[1] ~= 'any' then return {} end
usage_fold({journal = KEYS[1], usage = KEYS[2], totals = KEYS[3], hours = KEYS[4], config = KEYS[5]}, 2000)
local t = {usage = KEYS[2], now = now_ms(), half_life = usage_half_life(rl[2])}
local names, listed = {}, {}
for name in pairs(fc.tenants) do names[#names + 1] = name; listed[name] = true end
local fields = redis.call('HKEYS', KEYS[2])
for _, f in ipairs(fields) do
  if f ~= '*' and f ~= '*|run' and not string.find(f, '|', 1, true) and not listed[f] then
    names[#names + 1] = f; listed[f] = true
  end
end
table.sort(names)
local _, q = fair_usage(fc, t, '*')
local out = {}
local resource, q_held = 0, 0
for _, name in ipairs(names) do
  local v = fair_usage(fc, t, name)
  local i, used, held, qh = usage_share_parts(v, q)
  resource, q_held = i, qh
  out[#out + 1] = name; out[#out + 1] = string.format('%.17g', fair_weight(fc, name))
  out[#out + 1] = string.format('%.17g', used); out[#out + 1] = string.format('%.17g', held)
end
if #names == 0 then resource, _, _, q_held = usage_share_parts(q, q) end
local reply = {int_s(resource), string.format('%.17g', q_held), string.format('%.17g', tonumber(fc.default_weight)),
               fc.order == 'class' and 'class' or 'tenant'}
for _, x in ipairs(out) do reply[#reply + 1] = x end
return reply
