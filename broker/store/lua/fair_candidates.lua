-- Read only: what a `fair` queue's claim is decided over
-- (scheduling/claim_decision.cpp, fair_order.cpp), for the named classes: each
-- class's candidates by tenant slot, and the tenants' use. Nothing is chosen here.
-- PUSH scored a fair job score_pack(base + class band * FAIR_CLASS_SLOTS + tenant
-- slot, seq) (_lib_fairshare.lua), so a tenant slot's oldest job of a class band is
-- one ZRANGEBYSCORE. Per class, from its head:
--   order "tenant": the walk visits each non-empty (class band, slot) band in score
--     order, jumping past a band to the next, and lists the first jobs of each slot
--     the first time it meets it (the slots met again in a lower class are passed),
--     until every slot has been met;
--   order "class": every non-empty class band, from its head's slot on, lists the
--     first jobs of each slot;
--   a head scored under an earlier policy (below the fair bands): the first 32 jobs,
--     class band -1.
-- The start estimate's run lists its own jobs by the same walk (fair_candidates_of
-- in scheduling/fair_order.cpp): a change to the walk is made in both, and
-- ClaimCommit.AFairQueuesCandidatesAreListedAsTheEstimateListsThem compares them.
-- The use is read as stored, the journal not folded first (ClaimStore::fair_detail):
-- an attempt's end takes its amounts out of the held use itself.
-- KEYS (4): 1 config (fair_tenants, usage_half_life_ms), 2 ready prefix, 3 job prefix,
--   4 usage hash (keys.hpp usage)
-- ARGV: 1 the jobs to list per slot (the claim's count), 2.. the class ids
-- Reply: {fair_tenants JSON ('' = none), usage_half_life_ms ('' = the default),
--         {name, decayed use, held use, ...} for '*', each named tenant and each tenant
--         met, then per class {class id, {class band, slot, job id, score, tenant,
--         cpus, enqueued_at (ms: a locality hold's cutoff compares it), ...}}}
local raw = redis.call('HMGET', KEYS[1], 'fair_tenants', 'usage_half_life_ms')
local fc = fair_config(KEYS[1])
local depth = math.max(tonumber(ARGV[1]) or 1, 1)
local depth_s = int_s(depth)  -- ZRANGEBYSCORE's LIMIT count
local tenants = {['*'] = true}
for name in pairs(fc.tenants) do tenants[name] = true end

local function list(out, cb, slot, r)
  for i = 1, #r, 2 do
    local f = redis.call('HMGET', KEYS[3] .. r[i], 'tenant', 'cpus', 'enqueued_at')
    local tenant = f[1] or ''
    tenants[tenant] = true
    out[#out + 1] = int_s(cb); out[#out + 1] = int_s(slot); out[#out + 1] = r[i]; out[#out + 1] = r[i + 1]
    out[#out + 1] = tenant; out[#out + 1] = f[2] or ''; out[#out + 1] = f[3] or '0'
  end
end

-- A slot's first jobs in class band cb, from `low_s` (its head's score, or its range's start).
local function slot_jobs(ready, cb, slot, low_s)
  local range = fair_slot_range(fc, cb, slot)
  return redis.call('ZRANGEBYSCORE', ready, low_s, range.high_s, 'WITHSCORES', 'LIMIT', '0', depth_s)
end

local classes = {}
for k = 2, #ARGV do
  local id, ready, out = ARGV[k], KEYS[2] .. ARGV[k], {}
  local head = redis.call('ZRANGE', ready, '0', '0', 'WITHSCORES')
  if head[1] then
    local cb, slot = fair_band_of(fc, (score_unpack(tonumber(head[2]))))
    if cb < 0 then
      list(out, -1, 0, redis.call('ZRANGE', ready, '0', '31', 'WITHSCORES'))
    elseif fc.order ~= 'class' then
      local seen, left = {}, fc.slots + 1
      while true do
        cb, slot = fair_band_of(fc, (score_unpack(tonumber(head[2]))))
        if slot > fc.slots then slot = fc.slots end  -- slots of earlier weights: one more, as fair_slot_range reads them
        if not seen[slot] then
          seen[slot], left = true, left - 1
          list(out, cb, slot, depth > 1 and slot_jobs(ready, cb, slot, head[2]) or head)
          if left == 0 then break end
        end
        local high = fair_slot_range(fc, cb, slot).high_s
        if high == '+inf' then break end
        head = redis.call('ZRANGEBYSCORE', ready, string.sub(high, 2), '+inf', 'WITHSCORES', 'LIMIT', '0', '1')
        if not head[1] then break end
      end
    else
      while true do
        for s = slot < fc.slots and slot or fc.slots, fc.slots do
          list(out, cb, s, slot_jobs(ready, cb, s, s == slot and head[2] or fair_slot_range(fc, cb, s).low_s))
        end
        if cb >= 2 then break end
        head = redis.call('ZRANGEBYSCORE', ready, string.format('%.0f', score_pack(fc.base + (cb + 1) * FAIR_CLASS_SLOTS, 0)),
                          '+inf', 'WITHSCORES', 'LIMIT', '0', '1')
        if not head[1] then break end
        cb, slot = fair_band_of(fc, (score_unpack(tonumber(head[2]))))
      end
    end
  end
  classes[#classes + 1] = {id, out}
end

local names, fields = {}, {}
for name in pairs(tenants) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do fields[#fields + 1] = name; fields[#fields + 1] = name .. '|run' end
local usage = {}
for first = 1, #fields, 1000 do  -- unpack's bound
  local v = redis.call('HMGET', KEYS[4], unpack(fields, first, math.min(#fields, first + 999)))
  for i = 1, #v, 2 do
    local name = names[(first + i) / 2]
    usage[#usage + 1] = name; usage[#usage + 1] = v[i] or ''; usage[#usage + 1] = v[i + 1] or ''
  end
end
local reply = {raw[1] or '', raw[2] or '', usage}
for _, c in ipairs(classes) do reply[#reply + 1] = c end
return reply
