-- [fairshare] Tenant fair share for claim.lua under the queue policy `fair`
-- (docs/matching.md#fair-share). Measure: of the queue's dominant resource (GPUs, or
-- CPU cores in a queue without GPU jobs), use over time plus what is held now
-- ([usage] _lib_accounting.lua usage_share: a tenant's fraction of the queue's
-- decayed resource-seconds plus its fraction of what the queue holds now), divided
-- by its weight; the claim serves the tenant with the lowest share first.
-- PUSH scored a fair job score_pack(fair_tenants.base + class band + tenant slot, seq),
-- so each tenant's oldest job of a class in a ready set is one ZRANGEBYSCORE over its band.
-- Keys: the config hash (field fair_tenants, written by the broker from the queue
-- config) and t = {tenant_quotas, tenant_ledger, job_prefix, usage, now, half_life},
-- all declared by claim.

local function fair_config(config_key)  -- read once per call
  if per_call.fair_config == nil then
    local raw = redis.call('HGET', config_key, 'fair_tenants')
    per_call.fair_config = raw and cjson.decode(raw) or {base = 4096, slots = 1, default_weight = 1, tenants = {}}
  end
  return per_call.fair_config
end

-- [usage] The tenants' use (usage_view), read once per call and kept current by
-- fair_started: one HMGET of the queue's and every named tenant's fields (in slices
-- of 1000 fields: unpack's bound); a tenant without a weight is read when first met.
local function fair_usage(fc, t, tenant)
  local views = per_call.fair_usage
  if not views then
    views = {}
    local names = {'*'}
    for name in pairs(fc.tenants) do names[#names + 1] = name end
    for first = 1, #names, 500 do
      local fields = {}
      for i = first, math.min(#names, first + 499) do fields[#fields + 1] = names[i]; fields[#fields + 1] = names[i] .. '|run' end
      local v = redis.call('HMGET', t.usage, unpack(fields))
      for i = 1, #fields, 2 do views[fields[i]] = usage_view(v[i], v[i + 1], t.now, t.half_life) end
    end
    per_call.fair_usage = views
  end
  if not views[tenant] then
    local v = redis.call('HMGET', t.usage, tenant, tenant .. '|run')
    views[tenant] = usage_view(v[1], v[2], t.now, t.half_life)
  end
  return views[tenant], views['*']
end

-- A tenant's weight: its own, or the default.
local function fair_weight(fc, tenant)
  local entry = fc.tenants[tenant]
  return entry and tonumber(entry[2]) or tonumber(fc.default_weight)
end

local function fair_share(fc, t, tenant)
  if not tenant or tenant == '' then return 0 end  -- a job without a tenant is not shared
  return usage_share(fair_usage(fc, t, tenant)) / fair_weight(fc, tenant)
end

-- A claimed job's amounts join its tenant's held use (usage_started), and so the
-- views this call compares.
local function fair_started(fc, t, job, amounts, set)
  usage_started(t.usage, job, amounts, set, t.now, t.half_life, per_call.fair_usage)
end

-- [fairband] The bands of a fair ready set: the priority class first (reserved,
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

-- The lowest score of the class bands after `cb`: a head at or above it is of a lower
-- priority class (claim's early stop compares scores, not bands).
local function fair_band_end(fc, cb)
  if cb < 0 then return score_pack(fc.base, 0) end
  return score_pack(fc.base + (cb + 1) * FAIR_CLASS_SLOTS, 0)
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

-- [fairorder] order "tenant" (the default): each tenant's best job of the set is its
-- highest class's oldest; the lowest share wins, then the higher class, then FIFO.
-- The bands are the class order's (class band, then tenant slot), so a change of
-- order rescores nothing. One ZRANGEBYSCORE per non-empty (class, slot) band whose
-- slot has no candidate yet, from the head on: a slot met in a higher class is
-- skipped past in the lower ones, and the walk ends once every slot has one.
local function fair_head_by_tenant(fc, t, ready_key, gpus, head)
  local quotas = gpus > 0 and has_tenant_quotas(t)
  local best, first_block, seen, left = nil, nil, {}, fc.slots + 1
  while true do
    local band, head_seq = score_unpack(tonumber(head[2]))
    local cb, slot = fair_band_of(fc, band)
    if slot > fc.slots then slot = fc.slots end  -- slots of earlier weights: one more, as fair_slot_range reads them
    if not seen[slot] then
      seen[slot], left = true, left - 1
      local tenant = redis.call('HGET', t.job_prefix .. head[1], 'tenant') or ''
      local over = quotas and tenant_block(t, tenant, gpus)
      if over then
        first_block = first_block or over
      else
        local share, seq = fair_share(fc, t, tenant), head_seq
        if not best or share < best[3] or (share == best[3] and (cb < best[5] or (cb == best[5] and seq < best[4]))) then
          best = {head[1], head[2], share, seq, cb}
        end
      end
      if left == 0 then break end
    end
    -- The next non-empty band past this slot's (its range's end; the last slot's runs to the next class).
    local high = fair_slot_range(fc, cb, slot).high_s
    if high == '+inf' then break end
    head = redis.call('ZRANGEBYSCORE', ready_key, string.sub(high, 2), '+inf', 'WITHSCORES', 'LIMIT', '0', '1')
    if not head[1] then break end
  end
  if best then return best, nil end
  return nil, first_block
end

-- The job a `fair` claim takes from one ready set, as {id, score, share, seq, class
-- band}, or nil and the first quota block. A head scored under an earlier policy
-- (below the fair bands) is served first, with class band -1, so a policy change
-- strands nothing. [fairband] The set's highest priority class (its head's band)
-- offers each tenant slot's oldest job (one more range past the last slot: jobs
-- scored under earlier weights with more named tenants; a candidate's tenant is read
-- from the job, not from its slot) and the lowest share wins; only when every
-- tenant of that class is over its quota does the next class get a look.
-- [hotpath] The set's head is the oldest job of the lowest non-empty slot: the
-- slots below it are not read, nor is its own.
-- known: the set's head as the caller read it ({id, score, ...}), or nil.
local function fair_head(fc, t, ready_key, gpus, known)
  local head = known or redis.call('ZRANGE', ready_key, '0', '0', 'WITHSCORES')
  if not head[1] then return nil, nil end
  local cb, head_slot = fair_band_of(fc, (score_unpack(tonumber(head[2]))))
  if cb < 0 then
    local h, over = within_tenant_quota(t, ready_key, head, gpus)
    if h then return {h[1], h[2], -1, tonumber(h[2]), -1}, nil end
    return nil, over
  end
  if fc.order ~= 'class' then return fair_head_by_tenant(fc, t, ready_key, gpus, head) end  -- [fairorder]
  local quotas = gpus > 0 and has_tenant_quotas(t)
  local first_block = nil
  while true do
    local best = nil
    for slot = head_slot < fc.slots and head_slot or fc.slots, fc.slots do
      local range = fair_slot_range(fc, cb, slot)
      local r = head
      if slot ~= head_slot then
        r = redis.call('ZRANGEBYSCORE', ready_key, range.low_s, range.high_s, 'WITHSCORES', 'LIMIT', '0', '1')
      end
      if r[1] then
        local tenant = redis.call('HGET', t.job_prefix .. r[1], 'tenant') or ''
        local over = quotas and tenant_block(t, tenant, gpus)
        if over then
          first_block = first_block or over
        else
          local share, seq = fair_share(fc, t, tenant), tonumber(r[2]) - range.low
          if not best or share < best[3] or (share == best[3] and seq < best[4]) then best = {r[1], r[2], share, seq, cb} end
        end
      end
    end
    if best then return best, nil end
    -- Every tenant of this class over its quota: the set's next class, if it has one.
    if cb >= 2 then return nil, first_block end
    head = redis.call('ZRANGEBYSCORE', ready_key, string.format('%.0f', score_pack(fc.base + (cb + 1) * FAIR_CLASS_SLOTS, 0)),
                      '+inf', 'WITHSCORES', 'LIMIT', '0', '1')
    if not head[1] then return nil, first_block end
    cb, head_slot = fair_band_of(fc, (score_unpack(tonumber(head[2]))))
  end
end

-- [fairorder] The keys claim's choose sorts fair heads by ({id, score, share, seq,
-- class band} from fair_head): (k1, k2, seq), lowest first, and the score past
-- which no later head in the index can beat this one (class order: the classes
-- below its class; tenant order: none, a lower class may be a lower share's).
local function fair_rank(fc, head)
  if fc.order ~= 'class' then return head[3], head[5], head[4], math.huge end
  return head[5], head[3], head[4], fair_band_end(fc, head[5])
end
