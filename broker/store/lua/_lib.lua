-- Shared helpers, prepended to every script by cmake/embed_lua.cmake.
-- Keys of one queue share the hash tag {queue}; job keys are derived from the
-- queue prefix (ARGV[1], e.g. "ojs:{default}:") so they live in the same slot.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function job_key(prefix, id) return prefix .. 'job:' .. id end
local function ready_key(prefix, class) return prefix .. 'ready:' .. class end

-- (ecosystem: delegates to _declared.lua so the event record is written once)
local function emit(prefix, event_type, id, extra)
  emit_to(prefix .. 'events', job_key(prefix, id), event_type, id, extra)
end

-- Makes a job fetchable (ecosystem: the rule lives in _declared.lua).
local function make_available(prefix, id, now)
  make_available_in(job_key(prefix, id), prefix .. 'seq', function(class) return ready_key(prefix, class) end, id, now)
end

-- Scheduled jobs and due retries become available.
local function promote_due(prefix, now, limit)
  local due = redis.call('ZRANGEBYSCORE', prefix .. 'delayed', '-inf', now, 'LIMIT', 0, limit)
  for _, id in ipairs(due) do
    redis.call('ZREM', prefix .. 'delayed', id)
    local state = redis.call('HGET', job_key(prefix, id), 'state')
    if state == 'scheduled' or state == 'retryable' then
      make_available(prefix, id, now)
      emit(prefix, 'job.available', id, nil)
    end
  end
  return #due
end

local function is_terminal(state)
  return state == 'completed' or state == 'cancelled' or state == 'discarded'
end

local function job_snapshot(prefix, id)
  return redis.call('HGETALL', job_key(prefix, id))
end

-- GPU budget ledger of a queue: charged at claim, released by every transition
-- that ends an attempt (ack, fail, cancel, requeue), inside the same script.
local function release_budget(prefix, jk)
  local charged = tonumber(redis.call('HGET', jk, 'charged_gpus') or '0')
  if charged > 0 then
    redis.call('HINCRBY', prefix .. 'ledger', 'gpus', -charged)
    redis.call('HINCRBY', prefix .. 'ledger', 'gpu_jobs', -1)
    local tenant = redis.call('HGET', jk, 'tenant')
    if tenant and tenant ~= '' then redis.call('HINCRBY', prefix .. 'tenant-ledger', tenant, -charged) end
  end
  redis.call('HDEL', jk, 'charged_gpus')
end

-- nil when the budget allows `gpus` more; else {in_use, limit, kind}.
-- Read once per script run (a claim may test many classes), then kept current
-- by budget_charge as the same script charges jobs.
local budget_state = nil
local function budget_block(prefix, gpus)
  if gpus <= 0 then return nil end
  if not budget_state then
    local cfg = redis.call('HMGET', prefix .. 'config', 'max_total_gpus', 'max_concurrent_gpu_jobs')
    local led = redis.call('HMGET', prefix .. 'ledger', 'gpus', 'gpu_jobs')
    budget_state = {used = tonumber(led[1] or '0'), jobs = tonumber(led[2] or '0'),
                    max_gpus = tonumber(cfg[1] or ''), max_jobs = tonumber(cfg[2] or '')}
  end
  local b = budget_state
  if b.max_gpus and b.used + gpus > b.max_gpus then return {b.used, b.max_gpus, 'max_total_gpus'} end
  if b.max_jobs and b.jobs + 1 > b.max_jobs then return {b.jobs, b.max_jobs, 'max_concurrent_gpu_jobs'} end
  return nil
end

local function budget_charge(prefix, gpus)
  redis.call('HINCRBY', prefix .. 'ledger', 'gpus', gpus)
  redis.call('HINCRBY', prefix .. 'ledger', 'gpu_jobs', 1)
  if budget_state then
    budget_state.used = budget_state.used + gpus
    budget_state.jobs = budget_state.jobs + 1
  end
end

-- Per-tenant GPU quotas of a queue: `tenant-quotas` maps tenant -> max GPUs ('*' =
-- any tenant without an entry), `tenant-ledger` tenant -> GPUs charged. A job's
-- tenant is its `tenant` field (written at PUSH); release_budget gives them back.
local function tenant_block(prefix, tenant, gpus)
  if gpus <= 0 or not tenant or tenant == '' then return nil end
  local q = redis.call('HMGET', prefix .. 'tenant-quotas', tenant, '*')
  local limit = tonumber(q[1] or q[2] or '')
  if not limit then return nil end
  local used = tonumber(redis.call('HGET', prefix .. 'tenant-ledger', tenant) or '0')
  if used + gpus > limit then return {used, limit, 'tenant_quota:' .. tenant} end
  return nil
end

-- The first ready job of a class (at most 32 from the head) whose tenant is within
-- quota, as {id, score}; an over-quota tenant never blocks the others behind it.
-- nil and the first block when every scanned job is over its tenant's quota.
local tenant_quotas_present = nil  -- read once per script run
local function has_tenant_quotas(prefix)
  if tenant_quotas_present == nil then
    tenant_quotas_present = redis.call('EXISTS', prefix .. 'tenant-quotas') == 1
  end
  return tenant_quotas_present
end

local function within_tenant_quota(prefix, class, head, gpus)
  if gpus <= 0 or not has_tenant_quotas(prefix) then return head, nil end
  local range = redis.call('ZRANGE', ready_key(prefix, class), 0, 31, 'WITHSCORES')
  local seen, first_block = {}, nil
  for i = 1, #range, 2 do
    local tenant = redis.call('HGET', job_key(prefix, range[i]), 'tenant') or ''
    if not seen[tenant] then
      local over = tenant_block(prefix, tenant, gpus)
      if not over then return {range[i], range[i + 1]}, nil end
      seen[tenant] = true
      first_block = first_block or over
    end
  end
  return nil, first_block
end

local function charge_tenant(prefix, jk, gpus)
  local tenant = redis.call('HGET', jk, 'tenant')
  if tenant and tenant ~= '' then redis.call('HINCRBY', prefix .. 'tenant-ledger', tenant, gpus) end
end
