-- FETCH: atomically claim up to `count` jobs of the eligible requirement classes.
-- A job past its expires_at when it would be delivered is discarded instead
-- (OJS core; at most 100 per call) and the next best is taken.
-- KEYS (13 + n): 1 classes version, 2 paused, 3 delayed, 4 active, 5 seq, 6 events,
--   7 config, 8 ledger, 9 tenant quotas, 10 tenant ledger, 11 job prefix, 12 ready prefix,
--   13 stats, 14 rate window (zset: claim times in the rate period), then the ready set
--   of each eligible class (in ARGV order)
--   ([fairshare] config 7 also gives policy / fair_tenants; tenant ledger 10 the shares)
-- ARGV: worker_id, request_visibility_ms ('' = none), default_visibility_ms, count,
--       classes_version, score band (2^40, priority_score.hpp), seq at which the caller
--       saw the flagged classes empty ('' = none), empty flags (one char per eligible
--       class in ARGV order, '1' = empty at that seq),
--       [backfill] 9: per eligible class the reservation start its jobs must end by
--       ('ms,ms,...', 0 = none; '' = no class has one), then per eligible class
--       5 values: class id, bonus (soft score), hold cutoff (skip a head enqueued after
--       this ms; 0 = none), gpus the class needs (charged to the queue budget),
--       assigned devices JSON ('' = none)
-- Reply: {'ok', {job fields...}, {budget-blocked: class, in_use, limit, kind, ...},
--         rate limit that cut this claim short ('' = none | concurrency | rate),
--         queue seq, positions (1-based, ARGV order) of the eligible classes empty at that seq}
--        | {'paused'} | {'stale', current version}
local worker, request_vis, default_vis, count, version, BAND =
  ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
if redis.call('EXISTS', KEYS[2]) == 1 then return {'paused'} end
local versions = redis.call('MGET', KEYS[1], KEYS[5])  -- [hotpath] classes version and seq in one read
local current = versions[1] or '0'
if current ~= version then return {'stale', current} end
local q = {delayed = KEYS[3], seq = KEYS[5], events = KEYS[6], job_prefix = KEYS[11], ready_prefix = KEYS[12]}
local b = {config = KEYS[7], ledger = KEYS[8]}
local t = {tenant_quotas = KEYS[9], tenant_ledger = KEYS[10], job_prefix = KEYS[11]}
local now = now_ms()
-- [hotpath] numbers handed to redis.call are formatted with snprintf('%.17g') on
-- every call: constant and repeated arguments go as strings, each formatted once.
local now_s = tostring(now)
local seq_now = versions[2] or '0'
if promote_due(q, now, 1000) > 0 then seq_now = '' end  -- jobs entered ready sets: nothing known empty

-- [spec #17] Queue rate limit (_lib.lua rate_room): jobs over the limit stay available.
local rate_limited = ''
local rl = redis.call('HMGET', KEYS[7], 'rate_concurrency', 'rate_limit_starts', 'rate_period_ms',
                     'max_total_gpus', 'max_concurrent_gpu_jobs')  -- [hotpath] the budget limits in the same read
b.limits = {rl[4], rl[5]}
local rate_starts, rate_period = tonumber(rl[2] or ''), tonumber(rl[3] or '')
local room, why = rate_room(tonumber(rl[1] or ''), rate_starts, rate_period, KEYS[4], KEYS[14], now)
if room and room < count then count = math.max(room, 0); rate_limited = why end

-- [hotpath] Empty classes are skipped without a read: every job entering a ready set
-- takes a new seq (push, make_available), so a class seen empty at the current seq
-- is still empty. The reply reports the classes found empty, for the next claim.
local known_empty = seq_now ~= '' and ARGV[7] == seq_now and ARGV[8] ~= '' and ARGV[8] or nil
local empty, empty_list = {}, {}  -- position of an eligible class -> true; the positions found here
local NONE = {}  -- the head of a class not read

-- [fairshare] Queue policy `fair`: each ready set offers its lowest-share tenant's
-- oldest job and the classes compare by that share (_lib_fairshare.lua).
local fair = nil
if redis.call('HGET', KEYS[7], 'policy') == 'fair' then fair = fair_config(KEYS[7]) end
local backfill = backfill_limits(ARGV[9])  -- [backfill] _lib_backfill.lua

local claimed, blocked = {}, {}
local expired_left = 100
while #claimed < count do
  local best_id, best_ready, best_key, best_gpus, best_devices = nil, nil, nil, 0, ''
  for i = 10, #ARGV, 5 do
    local n = (i - 5) / 5
    local ready = KEYS[14 + n]
    local class, bonus, hold, gpus, devices = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4]
    local head = NONE
    if empty[n] then  -- found or known empty: not read again
    elseif known_empty and string.byte(known_empty, n) == 49 then  -- 49: '1'
      empty[n] = true
    else
      head = redis.call('ZRANGE', ready, '0', '0', 'WITHSCORES')
      if not head[1] then empty[n] = true; empty_list[#empty_list + 1] = n end
    end
    local over = nil
    if head[1] then over = budget_block(b, gpus) end
    if head[1] and not over then
      if fair then head, over = fair_head(fair, t, ready, gpus, BAND)  -- [fairshare]
      else head, over = within_tenant_quota(t, ready, head, gpus) end
    end
    if over then
      -- Over budget: the job stays available (never rejected) and the reason is reported.
      blocked[#blocked + 1] = class; blocked[#blocked + 1] = over[1]; blocked[#blocked + 1] = over[2]; blocked[#blocked + 1] = over[3]
    elseif head[1] then
      local id, score = head[1], tonumber(head[2])
      local held = false
      if hold > 0 then
        local enq = tonumber(redis.call('HGET', KEYS[11] .. id, 'enqueued_at') or '0')
        held = enq > hold -- enqueued too recently: keep it for a warm worker a little longer
      end
      -- [backfill] On GPUs held for a reservation, only a job declared to end before its start.
      if not held and backfill and backfill[n] then
        local declared
        id, score, declared = backfill_pick(t, ready, backfill[n], now, gpus)
        if id then score = tonumber(score)
        else
          held = true
          blocked[#blocked + 1] = class; blocked[#blocked + 1] = declared; blocked[#blocked + 1] = backfill[n]; blocked[#blocked + 1] = 'backfill'
        end
      end
      if not held then
        local key = {math.floor(score / BAND), -bonus, score}
        if fair then key = {head[3], -bonus, head[4]} end  -- [fairshare] lowest weighted share first
        if best_key == nil or key[1] < best_key[1] or (key[1] == best_key[1] and (key[2] < best_key[2] or (key[2] == best_key[2] and key[3] < best_key[3]))) then
          best_id, best_ready, best_key, best_gpus, best_devices = id, ready, key, gpus, devices
        end
      end
    end
  end
  if not best_id then break end
  redis.call('ZREM', best_ready, best_id)
  local jk = KEYS[11] .. best_id
  local job = read_job(jk) or {id = best_id}
  local expires = tonumber(job.expires_at or '')
  if expires and expires <= now then
    discard_expired(jk, job, KEYS[13], KEYS[6], now)
    expired_left = expired_left - 1
    if expired_left == 0 then break end
  else
  -- Visibility timeout: the fetch request's, then the job's, then the broker default.
  local vis = request_vis or tonumber(job.visibility_timeout_ms or '') or default_vis
  -- The execution timeout (timeout_ms / ext_ml_timeout_seconds) caps the
  -- reservation: heartbeats extend visibility but never past it.
  local deadline = now + vis
  local timeout = tonumber(job.timeout_ms or '')
  job.attempt = tostring(tonumber(job.attempt or '0') + 1)
  job.state, job.started_at, job.worker_id = 'active', now_s, worker
  local set = {'state', 'active', 'started_at', now_s, 'worker_id', worker, 'attempt', job.attempt}
  local del = {}
  if timeout and timeout > 0 then
    job.execution_deadline = tostring(now + timeout)
    set[#set + 1] = 'execution_deadline'; set[#set + 1] = job.execution_deadline
    if now + timeout < deadline then deadline = now + timeout end
  elseif job.execution_deadline then
    job.execution_deadline = nil; del[#del + 1] = 'execution_deadline'
  end
  deadline = tostring(deadline)
  job.visibility_deadline = deadline
  set[#set + 1] = 'visibility_deadline'; set[#set + 1] = deadline
  if best_gpus > 0 then
    local gpus_s = tostring(best_gpus)
    job.charged_gpus = gpus_s
    set[#set + 1] = 'charged_gpus'; set[#set + 1] = gpus_s
    budget_charge(b, best_gpus, gpus_s)
    if job.tenant and job.tenant ~= '' then redis.call('HINCRBY', KEYS[10], job.tenant, gpus_s) end
  end
  if best_devices ~= '' then
    job.ext_ml_assigned_devices = best_devices
    set[#set + 1] = 'ext_ml_assigned_devices'; set[#set + 1] = best_devices
  elseif job.ext_ml_assigned_devices then
    job.ext_ml_assigned_devices = nil; del[#del + 1] = 'ext_ml_assigned_devices'
  end
  redis.call('HSET', jk, unpack(set))
  if #del > 0 then redis.call('HDEL', jk, unpack(del)) end
  redis.call('ZADD', KEYS[4], deadline, best_id)
  emit(KEYS[6], 'job.started', job, {'worker_id', worker})
  claimed[#claimed + 1] = flat_job(job)
  if rate_starts and rate_period then rate_record(KEYS[14], rate_period, now_s, best_id .. ':' .. job.attempt) end  -- [spec #17]
  end
end
return {'ok', claimed, blocked, rate_limited, seq_now, empty_list}
