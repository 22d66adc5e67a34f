-- Readers of a `fair` queue's layout (docs/matching.md#fair-share), for
-- fair_candidates.lua (what the broker's fair order is decided over) and PUSH. The
-- shares themselves are weighed in C++ only (scheduling/fair_order.cpp
-- fair_shares_from), from the usage hash as stored (_lib_accounting.lua).
-- PUSH scored a fair job score_pack(fair_tenants.base + class band + tenant slot, seq),
-- so each tenant's oldest job of a class in a ready set is one ZRANGEBYSCORE over its band.
-- Keys: the config hash (field fair_tenants, written by the broker from the queue
-- config), declared by the caller.

local function fair_config(config_key)  -- read once per call
  if per_call.fair_config == nil then
    local raw = redis.call('HGET', config_key, 'fair_tenants')
    per_call.fair_config = raw and cjson.decode(raw) or {base = 4096, slots = 1, default_weight = 1, tenants = {}}
  end
  return per_call.fair_config
end

-- The bands of a fair ready set: the priority class first (reserved,
-- on-demand, spot; the classes preemption ranks), then the tenant slot.
-- PUSH scored a job score_pack(base + (2 - class rank) * FAIR_CLASS_SLOTS + slot, seq)
-- (priority_score.hpp order_base; the loader checks this constant against kMaxFairSlots).
local FAIR_CLASS_SLOTS = 1365 -- tenant slots per priority class

-- The class band (0 reserved, 1 on-demand, 2 spot) and tenant slot of a fair band;
-- band -1 for a band below the fair ones (scored under an earlier policy).
local function fair_band_of(fc, band)
  if band < fc.base then return -1, 0 end
  local cb = math.floor((band - fc.base) / FAIR_CLASS_SLOTS)
  return cb, band - fc.base - cb * FAIR_CLASS_SLOTS
end

-- The range of tenant slot `slot` of class band `cb` in a ready set: its lowest
-- score, and the bounds ZRANGEBYSCORE takes, formatted once per call (the same for
-- every ready set). The last slot's range runs to the next class band.
local function fair_slot_range(fc, cb, slot)
  fc.ranges = fc.ranges or {}
  local key = cb * FAIR_CLASS_SLOTS + slot
  local r = fc.ranges[key]
  if not r then
    local first = fc.base + key
    local low = score_pack(first, 0)
    local high_s = '+inf'  -- the last slot of the last class: nothing scores above it
    if slot < fc.slots or cb < 2 then
      high_s = '(' .. string.format('%.0f', (slot >= fc.slots and fc.base + (cb + 1) * FAIR_CLASS_SLOTS or first + 1) * SCORE_BAND)
    end
    r = {low = low, low_s = string.format('%.0f', low), high_s = high_s}
    fc.ranges[key] = r
  end
  return r
end

