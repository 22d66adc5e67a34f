-- FETCH's commit: the broker decided which jobs this worker takes (over a snapshot:
-- scheduling/claim_decision.cpp); this script starts them, each only if what must
-- hold still does. No choice is made here: the picks are tried in the order given,
-- and a pick whose check fails is skipped and named in the reply, so the broker can
-- decide again on fresh reads. Placement quality depends on the snapshot's
-- freshness; correctness (budget, quota, rate limit, one owner per job) does not.
-- A job past its expires_at when it would be delivered is discarded instead (OJS
-- core; at most 100 per call); a head pick then takes the class's next head.
-- KEYS (18 + 11n): 1 classes version, 2 paused, 3 delayed, 4 active, 5 seq, 6 events,
--   7 config, 8 ledger, 9 tenant quotas, 10 tenant ledger, 11 job prefix, 12 ready prefix,
--   13 stats, 14 rate window (zset: claim times in the rate period), 15 class heads,
--   16 this worker's held set in the queue (keys.hpp held), 17 finished prefix,
--   18 the usage hash (a `fair` queue's started job joins its tenant's held use),
--   n = 0 or 1: 19-29 the workflow keys (_lib_workflows.lua: an expired step ends its
--   workflow's step). Sent only when needed (a key costs a call ~1.1k
--   instructions): without them, the commit stops before an expired workflow step,
--   leaves it in place and says so (the reply's 5th element), and ClaimStore::commit
--   calls again with them. A class's ready set is the ready prefix + the class id.
-- ARGV: 1 worker_id, 2 request_visibility_ms ('' = none), 3 default_visibility_ms, 4 count
--       (claim at most this many of the picks), 5 classes_version, 6 score band (2^40,
--       priority_score.hpp; must equal _lib.lua's), 7 '1' = list each claimed job in the
--       held set, 8 the picks, one line each (each line starts with a newline): class id
--       TAB job id ('' = the class's head as this script finds it) TAB hold cutoff (ms: a
--       job enqueued after it is not taken; 0 = none) TAB gpus (charged to the queue
--       budget and the tenant's quota) TAB assigned devices JSON ('' = none) TAB GPU
--       memory (MB) charged to a GPU-memory budget TAB TPU chips (charged to a TPU-chip
--       budget), 9 '1' = the queue's policy
--       is `fair`: each started job joins its tenant's held use (_lib_accounting.lua
--       usage_started; the usage journal is folded by the maintenance pass, not here),
--       10 '0' = the broker's snapshot saw no scheduled job or retry due: none is promoted
--       here (the maintenance pass promotes what falls due since; a promotion that finds
--       nothing cost the call ~12k instructions); else due ones are made available first
-- Reply: {'ok', {claimed job ids} (ClaimStore::commit reads the jobs natively), {skipped pick: class, in_use, limit, why, ...} (why: a
--         budget limit | tenant_quota:<tenant> | gone | held), rate limit that cut this
--         claim short ('' = none | concurrency | rate), '1' = stopped before an expired
--         workflow step: call again with the workflow keys ('' = no), the number of due
--         scheduled jobs and retries made available first (the broker's snapshot
--         predates them: with no pick taken it decides again)}
--        | {'paused'} | {'stale', current version}
local worker, request_vis, default_vis, count, version =
  ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
if ARGV[6] ~= SCORE_BAND_S and tonumber(ARGV[6]) ~= SCORE_BAND then error('the broker scores with band ' .. ARGV[6] .. ', _lib.lua with ' .. SCORE_BAND) end
local state = redis.call('MGET', KEYS[2], KEYS[1])  -- paused flag and classes version in one read
if state[1] then return {'paused'} end
local current = state[2] or '0'
if current ~= version then return {'stale', current} end
local q = {delayed = KEYS[3], seq = KEYS[5], heads = KEYS[15], events = KEYS[6], job_prefix = KEYS[11], ready_prefix = KEYS[12]}
local b = {config = KEYS[7], ledger = KEYS[8]}
local now = now_ms()
local t = {tenant_quotas = KEYS[9], tenant_ledger = KEYS[10], job_prefix = KEYS[11], now = now}
-- numbers handed to redis.call are formatted with snprintf('%.17g') on
-- every call: constant and repeated arguments go as strings, each formatted once.
local now_s = int_s(now)
-- A job past its expires_at when it is promoted or would be delivered is discarded, as
-- any discard: a workflow's ends its step, which needs the workflow keys (KEYS 19-29);
-- without them the job is left for the call with them (`more`).
local more = ''  -- '1': stopped before an expired workflow step (KEYS 19-29 not sent)
local function lacks_workflow_keys(job) return job.workflow_id and #KEYS < 29 end
local function discard_expired_job(jk, job)
  discard_expired(jk, job, KEYS[13], KEYS[6], KEYS[17], now)
  if job.workflow_id then workflow_job_ended(workflow_keys(KEYS, 19, KEYS[6]), job, 'failed', now) end
end
local promoted = 0
if ARGV[10] ~= '0' then
  promoted = promote_due(q, now, 1000, function(jk, job)
    if lacks_workflow_keys(job) then
      redis.call('ZADD', KEYS[3], now_s, job.id)  -- due still
      more = '1'
      return
    end
    discard_expired_job(jk, job)
  end, now_s)
end

-- Queue rate limit (_lib.lua rate_room): jobs over the limit stay available.
local rate_limited = ''
local rl = redis.call('HMGET', KEYS[7], 'rate_concurrency', 'rate_limit_starts', 'rate_period_ms',
                     'max_total_gpus', 'max_concurrent_gpu_jobs', 'tenant_quotas', 'max_total_gpu_memory_mb',
                     'usage_half_life_ms', 'cohort_max_gpus', 'max_total_tpu_chips')  -- one read
b.limits = {rl[4], rl[5], rl[7], rl[9], rl[10]}
-- queue_config.lua writes the config's tenant_quotas field with the tenant quota hash:
-- without it there is no quota, and has_tenant_quotas needs no EXISTS of its own.
per_call.tenant_quotas = rl[6] ~= false
local rate_starts, rate_period = tonumber(rl[2] or ''), tonumber(rl[3] or '')
local room, why = rate_room(tonumber(rl[1] or ''), rate_starts, rate_period, KEYS[4], KEYS[14], now)
if room and room < count then count = math.max(room, 0); rate_limited = why end

local record = ARGV[7] == '1'
local started_us = int_s(usage_clock_us())  -- the start of each claimed attempt, for its resource-seconds
local claimed, skipped = {}, {}
local function skip(class, in_use, limit, why)
  skipped[#skipped + 1] = class; skipped[#skipped + 1] = in_use; skipped[#skipped + 1] = limit; skipped[#skipped + 1] = why
end

-- The call's state for start_attempt (_lib_claim.lua).
local starting = {worker = worker, now = now, now_s = now_s, started_us = started_us, request_vis = request_vis,
                  default_vis = default_vis, record = record, rate_starts = rate_starts, rate_period = rate_period,
                  budget = b, tenant_ledger = KEYS[10], active = KEYS[4], held = KEYS[16], events = KEYS[6],
                  rate_window = KEYS[14], stats = KEYS[13]}
-- A `fair` queue's started job joins its tenant's held use.
local fair_on_set = nil
if ARGV[9] == '1' then
  local half_life = usage_half_life(rl[8])
  fair_on_set = function(job, set) usage_started(KEYS[18], job, usage_amounts(job), set, now, half_life) end
end

-- One pick: its job (given, or the class's head), checked, then started. Returns
-- 'again' when a head pick discarded an expired job (the class's next head is
-- tried), 'stop' when the call must end.
local expired_left = 100
local function commit_pick(class, given, hold, gpus, devices, mem, tpu)
  local ready = KEYS[12] .. class
  local id, after = given, nil
  if given == '' then
    local h = redis.call('ZRANGE', ready, '0', '1', 'WITHSCORES')
    if not h[1] then
      redis.call('ZREM', KEYS[15], class)  -- the index's entry of an empty set, repaired
      skip(class, 0, 0, 'gone')
      return
    end
    id, after = h[1], h
  elseif not redis.call('ZSCORE', ready, given) then
    skip(class, 0, 0, 'gone')  -- taken or withdrawn since the broker read it
    return
  end
  local over = budget_block(b, gpus, mem, tpu)
  if over then skip(class, over[1], over[2], over[3]); return end
  local jk = KEYS[11] .. id
  local job = read_claim_fields(jk, id)
  if gpus > 0 and has_tenant_quotas(t) then
    local blocked = tenant_block(t, job.tenant, gpus)
    if blocked then skip(class, blocked[1], blocked[2], blocked[3]); return end
  end
  if hold > 0 and tonumber(job.enqueued_at or '0') > hold then skip(class, 0, 0, 'held'); return end
  local expires = tonumber(job.expires_at or '')
  if expires and expires <= now and lacks_workflow_keys(job) then more = '1'; return 'stop' end
  -- The job leaves its ready set, and the class's index entry follows (for a head,
  -- from the next job read with it: ready_remove's re-read is spared).
  if after then
    redis.call('ZREM', ready, id)
    if after[3] then redis.call('ZADD', KEYS[15], after[4], class) else redis.call('ZREM', KEYS[15], class) end
  else
    ready_remove(KEYS[15], ready, class, id)
  end
  if expires and expires <= now then
    discard_expired_job(jk, read_job(jk) or job)  -- rare: the whole job, for its workflow step and event
    expired_left = expired_left - 1
    if expired_left == 0 then return 'stop' end
    if given == '' then return 'again' end
    return
  end
  claimed[#claimed + 1] = start_attempt(starting, jk, id, job, gpus, devices, mem, tpu, fair_on_set)
end

for line in string.gmatch(ARGV[8], '\n([^\n]*)') do
  if #claimed >= count then break end
  local class, given, hold, gpus, devices, mem, tpu =
    string.match(line, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$')
  if not class then error('claim: unreadable pick line: ' .. line) end
  hold, gpus, mem, tpu = text_number(hold) or 0, text_number(gpus) or 0, text_number(mem) or 0, text_number(tpu) or 0
  local outcome = commit_pick(class, given, hold, gpus, devices, mem, tpu)
  while outcome == 'again' and #claimed < count do outcome = commit_pick(class, given, hold, gpus, devices, mem, tpu) end
  if outcome == 'stop' then break end
end
return {'ok', claimed, skipped, rate_limited, more, promoted}
