-- [fairshare] Tenant fair share for claim.lua under the queue policy `fair`
-- (docs/matching.md#fair-share). Measure: of the queue's dominant resource (GPUs, or
-- CPU cores in a queue without GPU jobs), use over time plus what is held now
-- ([usage] _lib_accounting.lua usage_share: a tenant's fraction of the queue's
-- decayed resource-seconds plus its fraction of what the queue holds now), divided
-- by its weight; the claim serves the tenant with the lowest share first.
-- PUSH scored a fair job score_pack(fair_tenants.base + tenant slot, seq), so each
-- tenant's oldest job in a ready set is one ZRANGEBYSCORE over its slot's band.
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

local function fair_share(fc, t, tenant)
  if not tenant or tenant == '' then return 0 end  -- a job without a tenant is not shared
  local entry = fc.tenants[tenant]
  local weight = entry and tonumber(entry[2]) or tonumber(fc.default_weight)
  return usage_share(fair_usage(fc, t, tenant)) / weight
end

-- A claimed job's amounts join its tenant's held use (usage_started) and the
-- views this call compares.
local function fair_started(fc, t, job, amounts, set)
  local tenant = usage_started(t.usage, job, amounts, set)
  local views = per_call.fair_usage
  if not views then return end
  for _, name in ipairs({tenant, '*'}) do
    local v = views[name]
    if v then for i = 1, 4 do v.held[i] = v.held[i] + amounts[i] end end
  end
end

-- The job a `fair` claim takes from one ready set, as {id, score, share, seq}, or
-- nil and the first quota block. A head scored under an earlier policy (below the
-- fair bands) is served first, with share -1, so a policy change strands nothing.
local function fair_head(fc, t, ready_key, gpus)
  local head = redis.call('ZRANGE', ready_key, 0, 0, 'WITHSCORES')
  if not head[1] then return nil, nil end
  if score_unpack(tonumber(head[2])) < fc.base then
    local h, over = within_tenant_quota(t, ready_key, head, gpus)
    if h then return {h[1], h[2], -1, tonumber(h[2])}, nil end
    return nil, over
  end
  local best, first_block = nil, nil
  -- One more range past the last slot: jobs scored under earlier weights with more
  -- named tenants (a candidate's tenant is read from the job, not from its slot).
  for slot = 0, fc.slots do
    local low = score_pack(fc.base + slot, 0)
    local high = slot == fc.slots and '+inf' or '(' .. string.format('%.0f', score_pack(fc.base + slot + 1, 0))
    local r = redis.call('ZRANGEBYSCORE', ready_key, string.format('%.0f', low), high, 'WITHSCORES', 'LIMIT', 0, 1)
    if r[1] then
      local tenant = redis.call('HGET', t.job_prefix .. r[1], 'tenant') or ''
      local over = tenant_block(t, tenant, gpus)
      if over then
        first_block = first_block or over
      else
        local share, seq = fair_share(fc, t, tenant), tonumber(r[2]) - low
        if not best or share < best[3] or (share == best[3] and seq < best[4]) then best = {r[1], r[2], share, seq} end
      end
    end
  end
  if best then return best, nil end
  return nil, first_block
end
