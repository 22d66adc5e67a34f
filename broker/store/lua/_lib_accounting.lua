-- [usage] Resource accounting (docs/operations.md#resource-accounting, issue #32).
-- Every end of a running attempt (ack, fail: retry, requeue, reclaim, discard;
-- cancel) charges what the job held from its start to now, in resource-microseconds,
-- exactly once and in the same step as the transition:
--   the job hash (usage_<resource>_us, summed over its attempts: the job's record),
--   the queue's totals (keys.hpp usage_totals: tenant TAB resource -> us, never
--   decayed; /metrics ojs_resource_seconds_total), the queue's per-hour rollup
--   (keys.hpp usage_hours: hour TAB tenant TAB type TAB worker TAB resource -> us,
--   trimmed to --usage-retention-hours by the broker), and the decayed usage that
--   the `fair` policy weighs (keys.hpp usage: see below).
-- Resources, in this order everywhere: gpu (GPUs charged), cpu (the job's
-- ext_ml cpu_cores, 1 when none), memory_mb (host memory declared, MB), gpu_memory_mb
-- (GPU memory charged, MB). Amount x microseconds: exact integers.
local USAGE_RESOURCES = {'gpu', 'cpu', 'memory_mb', 'gpu_memory_mb'}

-- What the job holds while it runs, one amount per resource. Read before
-- release_budget, which clears the charge.
local function usage_amounts(job)
  return {tonumber(job.charged_gpus or '0') or 0, tonumber(job.cpus or '1') or 1, tonumber(job.mem_mb or '0') or 0,
          tonumber(job.charged_gpu_mem_mb or '0') or 0}
end

-- The usage hash (keys.hpp usage) of a queue, per tenant ('*': the whole queue;
-- '': jobs without a tenant; tenant names never hold '*' or '|'):
--   <tenant>      'at u1 u2 u3 u4': resource-seconds used by ended attempts,
--                 decayed to `at` (ms) with the queue's half-life;
--   <tenant>|run  'n1 n2 n3 n4': what the tenant's running jobs hold now, kept by
--                 claim under `fair` (the job's field usage_run says it was added).
-- A missing or short value reads as zeros.
local USAGE_HALF_LIFE_MS = 3600000  -- the default of tenant_fairness.half_life_seconds (an hour)

local function usage_numbers(raw, n)
  local v = {}
  if raw then for x in string.gmatch(raw, '%S+') do v[#v + 1] = tonumber(x) or 0 end end
  for i = #v + 1, n do v[i] = 0 end
  return v
end

-- Decayed use `v` ('at u1..u4' numbers) brought to `now`: halved every half_life_ms
-- (0: nothing is remembered).
local function usage_decayed(v, now, half_life_ms)
  if half_life_ms <= 0 then
    for i = 2, 5 do v[i] = 0 end
  elseif now > v[1] then
    local f = 2 ^ (-(now - v[1]) / half_life_ms)
    for i = 2, 5 do v[i] = v[i] * f end
  end
  v[1] = math.max(v[1], now)
  return v
end

local function usage_text(v)
  local out = {}
  for i = 1, #v do out[i] = v[i] == math.floor(v[i]) and math.abs(v[i]) < 1e15 and int_s(v[i]) or string.format('%.17g', v[i]) end
  return table.concat(out, ' ')
end

-- The queue config's half-life (field usage_half_life_ms, written from
-- tenant_fairness.half_life_seconds), given its value as read.
local function usage_half_life(raw)
  return tonumber(raw or '') or USAGE_HALF_LIFE_MS
end

-- A tenant's use as the fair order weighs it: {used = resource-seconds decayed to
-- now, held = what its running jobs hold}, from its two fields as read.
local function usage_view(decayed, run, now, half_life_ms)
  local d = usage_decayed(usage_numbers(decayed, 5), now, half_life_ms)
  return {used = {d[2], d[3], d[4], d[5]}, held = usage_numbers(run, 4)}
end

-- [fairshare] The share of tenant view `v` in the queue's view `q`: its fraction of
-- the queue's decayed use plus its fraction of what the queue holds now, of the
-- queue's dominant resource: GPUs when the queue uses or holds any, else CPU cores
-- (a CPU-only queue). Not the largest fraction per tenant (DRF over capacity): the
-- claim knows no capacity, and over the queue's own totals a lightly used resource
-- (a few CPU jobs in a GPU queue) would make one job a whole share (the simulator's
-- trace put team-a at 0.20 instead of 0.25 that way).
local function usage_share(v, q)
  for i = 1, 2 do
    if q.used[i] > 0 or q.held[i] > 0 then
      local s = 0
      if q.used[i] > 0 then s = v.used[i] / q.used[i] end
      if q.held[i] > 0 then s = s + v.held[i] / q.held[i] end
      return s
    end
  end
  return 0
end

-- Adds (sign 1) or removes (-1) a running job's amounts in <tenant>|run fields
-- read as `values`; returns the HSET arguments.
local function usage_run_update(fields, values, amounts, sign)
  local out = {}
  for k, f in ipairs(fields) do
    local r = usage_numbers(values[k], 4)
    for i = 1, 4 do r[i] = math.max(r[i] + sign * amounts[i], 0) end
    out[#out + 1] = f; out[#out + 1] = usage_text(r)
  end
  return out
end

local function usage_tenant(job)
  return job.tenant or ''
end

-- Claim under `fair`: the job's amounts join its tenant's and the queue's held
-- use. usage_key: keys.hpp usage; set: claim's HSET list for the job (usage_run is
-- added). Returns the tenant it charged.
local function usage_started(usage_key, job, amounts, set)
  local tenant = usage_tenant(job)
  local fields = {tenant .. '|run', '*|run'}
  redis.call('HSET', usage_key, unpack(usage_run_update(fields, redis.call('HMGET', usage_key, unpack(fields)), amounts, 1)))
  job.usage_run = '1'
  set[#set + 1] = 'usage_run'; set[#set + 1] = '1'
  return tenant
end

-- The microseconds of Redis TIME (claim writes the job's started_us with it).
local function usage_clock_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The keys usage_ended needs, declared in a transition's KEYS from `first` on, in
-- the order of keys.hpp usage_transition_keys: usage, totals, hours, queue config.
local function usage_keys(KEYS, first)
  return {usage = KEYS[first], totals = KEYS[first + 1], hours = KEYS[first + 2], config = KEYS[first + 3]}
end

-- The end of a running attempt. u: {usage, totals, hours, config} (keys.hpp usage,
-- usage_totals, usage_hours, config: its field usage_half_life_ms); job: as read,
-- before release_budget (which clears the charge); now: ms. The job's record fields
-- (usage_<resource>_us) are appended to `set` (the caller's HSET of the job, so
-- its reply has them) or, without one, written here.
local function usage_ended(u, jk, job, now, set)
  local started = tonumber(job.started_at or '')
  if not started then return end
  local amounts = usage_amounts(job)
  local dur_us = math.max(usage_clock_us() - (tonumber(job.started_us or '') or started * 1000), 0)
  local tenant = usage_tenant(job)
  local half_life = usage_half_life(redis.call('HMGET', u.config, 'usage_half_life_ms')[1])
  local fields = {tenant, '*', tenant .. '|run', '*|run'}
  local cur = redis.call('HMGET', u.usage, unpack(fields))
  local decayed = {}
  for k = 1, 2 do
    local v = usage_decayed(usage_numbers(cur[k], 5), now, half_life)
    for i = 1, 4 do v[i + 1] = v[i + 1] + amounts[i] * dur_us / 1000000 end
    decayed[#decayed + 1] = fields[k]; decayed[#decayed + 1] = usage_text(v)
  end
  if job.usage_run then
    local run = usage_run_update({fields[3], fields[4]}, {cur[3], cur[4]}, amounts, -1)
    for i = 1, #run do decayed[#decayed + 1] = run[i] end
    job.usage_run = nil
    redis.call('HDEL', jk, 'usage_run')
  end
  redis.call('HSET', u.usage, unpack(decayed))
  -- The record: the job's, the totals and the hour's, the same integers.
  local record, hour = {}, int_s(math.floor(now / 3600000))
  local row = hour .. '\t' .. tenant .. '\t' .. (job.type or '') .. '\t' ..
              ((job.worker_id or '') ~= '' and job.worker_id or '-') .. '\t'
  for i, name in ipairs(USAGE_RESOURCES) do
    local used = math.floor(amounts[i] * dur_us)
    if used > 0 then
      local used_s, field = int_s(used), 'usage_' .. name .. '_us'
      job[field] = int_s((tonumber(job[field] or '0') or 0) + used)
      record[#record + 1] = field; record[#record + 1] = job[field]
      redis.call('HINCRBY', u.totals, tenant .. '\t' .. name, used_s)
      redis.call('HINCRBY', u.hours, row .. name, used_s)
    end
  end
  if set then
    for i = 1, #record do set[#set + 1] = record[i] end
  elseif #record > 0 then
    redis.call('HSET', jk, unpack(record))
  end
end
