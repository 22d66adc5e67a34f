-- The start of a claimed attempt on a worker, in the claim's one step (claim.lua):
-- its fields, the queue budget and tenant charge, the active
-- index, the worker's held set, the event and the rate window.
-- s: the call's state, built once per call: {worker, now, now_s, started_us,
--    request_vis, default_vis, record (list it in the held set), rate_starts,
--    rate_period, budget (budget_charge's b), tenant_ledger, active, held, events,
--    rate_window, stats} (keys the caller declares).
-- tpu: the TPU chips charged to the queue's budget (0: none).
-- on_set(job, set): a fair queue's hook (its tenant's held use), or nil.
-- job: the fields read_claim_fields read. Returns the reply entry: the job's id
-- alone. The broker reads the job natively behind the call (ClaimStore::commit),
-- this attempt's writes included: the document never crosses the Lua bridge (in
-- and out it cost ~45k instructions a claim), nor do the pairs written (~15k more).
local function start_attempt(s, jk, id, job, gpus, devices, mem, tpu, on_set)
  job.attempt = int_s(tonumber(job.attempt or '0') + 1)
  job.state, job.started_at, job.worker_id = 'active', s.now_s, s.worker
  local deadline, dropped = start_deadlines(job, s.now, s.request_vis, s.default_vis)
  deadline = int_s(deadline)
  job.visibility_deadline = deadline
  -- A table or string built here is paid again in Lua's collector: the
  -- fields every claim writes in one constructor, `del` only when a field goes.
  local set = {'state', 'active', 'started_at', s.now_s, 'started_us', s.started_us, 'worker_id', s.worker, 'attempt', job.attempt,
               'visibility_deadline', deadline}
  local del = NO_FIELDS
  if job.execution_deadline then
    job.execution_deadline = int_s(job.execution_deadline)
    set[#set + 1] = 'execution_deadline'; set[#set + 1] = job.execution_deadline
  end
  if dropped then del = {'execution_deadline'} end
  if gpus > 0 then
    local gpus_s = int_s(gpus)
    job.charged_gpus = gpus_s
    set[#set + 1] = 'charged_gpus'; set[#set + 1] = gpus_s
    if mem > 0 then
      job.charged_gpu_mem_mb = int_s(mem)
      set[#set + 1] = 'charged_gpu_mem_mb'; set[#set + 1] = job.charged_gpu_mem_mb
    end
    local borrowed = budget_charge(s.budget, gpus, gpus_s, mem)
    if borrowed > 0 then
      job.borrowed_gpus = int_s(borrowed)
      set[#set + 1] = 'borrowed_gpus'; set[#set + 1] = job.borrowed_gpus
    end
    if job.tenant and job.tenant ~= '' then redis.call('HINCRBY', s.tenant_ledger, job.tenant, gpus_s) end
  end
  if tpu > 0 then
    local tpu_s = int_s(tpu)
    job.charged_tpu_chips = tpu_s
    set[#set + 1] = 'charged_tpu_chips'; set[#set + 1] = tpu_s
    budget_charge_tpu(s.budget, tpu, tpu_s)
  end
  if on_set then on_set(job, set) end
  if devices ~= '' then
    job.ext_ml_assigned_devices = devices
    set[#set + 1] = 'ext_ml_assigned_devices'; set[#set + 1] = devices
  elseif job.ext_ml_assigned_devices then
    job.ext_ml_assigned_devices = nil
    if del == NO_FIELDS then del = {} end
    del[#del + 1] = 'ext_ml_assigned_devices'
  end
  redis.call('HSET', jk, unpack(set))
  if #del > 0 then redis.call('HDEL', jk, unpack(del)) end
  redis.call('ZADD', s.active, deadline, id)
  if s.record then redis.call('SADD', s.held, id) end  -- the worker's load, in the same step as the claim
  emit(s.events, 'job.started', job, nil, 'worker_id', s.worker)
  if s.rate_starts and s.rate_period then rate_record(s.rate_window, s.rate_period, s.now_s, id .. ':' .. job.attempt) end
  count_minute(s.stats, 'dispatched', s.now)  -- the scheduling stats' and weighted pools' starts per minute
  return id
end

-- The fields of a waiting job that its claim reads, tests or passes on (commit_pick,
-- start_attempt, start_deadlines, emit, a fair queue's usage_started): one HMGET.
-- A field a helper on this path comes to read is added here.
local function read_claim_fields(jk, id)
  local f = redis.call('HMGET', jk, 'attempt', 'tenant', 'enqueued_at', 'expires_at', 'workflow_id', 'execution_deadline',
                       'ext_ml_assigned_devices', 'visibility_timeout_ms', 'timeout_ms', 'type', 'queue', 'cpus', 'mem_mb')
  return {id = id, attempt = f[1] or nil, tenant = f[2] or nil, enqueued_at = f[3] or nil, expires_at = f[4] or nil,
          workflow_id = f[5] or nil, execution_deadline = f[6] or nil, ext_ml_assigned_devices = f[7] or nil,
          visibility_timeout_ms = f[8] or nil, timeout_ms = f[9] or nil, type = f[10] or nil, queue = f[11] or nil,
          cpus = f[12] or nil, mem_mb = f[13] or nil}
end
