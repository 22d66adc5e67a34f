-- NACK / reclaim: the broker decided the outcome from a snapshot; apply it if the
-- job is still the attempt that snapshot saw (compare-and-set on attempt).
-- KEYS (15 + 11n): 1 job hash, 2 active, 3 delayed, 4 dead, 5 stats, 6 events, 7 ledger,
--            8 tenant ledger, 9 preempting, 10 ready set of the job's class, 11 seq,
--            12 held prefix (keys.hpp held_prefix), 13 class heads, 14-15 the usage journal
--            and hash (_lib_accounting.lua usage_keys), n = 0 or 1: 16-26 the workflow keys
--            (_lib_workflows.lua), sent only for a workflow's job: without them such a job
--            answers {'need_keys'}, nothing written.
-- ARGV: expected_attempt, outcome (retry|discard|dead_letter|requeue|reclaim), due_ms (retry),
--       error_json, errors_json, require_expired ('1' = only if the visibility deadline
--       has passed: used by the reaper), worker_id ('' = any)
-- Reply: {'ok'} | {'not_found'} | {'conflict', state} | {'stale', attempt} | {'extended'} | {'need_keys'}
-- The job is not in the reply: JobStore::fail reads it back natively, behind the call
-- in the same round trip (through Lua, in and out, it cost the call ~100k instructions).
local expected, outcome, due, err, errors, require_expired, worker =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local jk = KEYS[1]
-- Only the fields this script and its helpers read (held_by, usage_ended, release_budget,
-- gang_reset, make_available, emit, workflow_job_ended), into a table constructor. A
-- field a helper comes to read on this path is added here. An absent field is false.
local f = redis.call('HMGET', jk, 'id', 'state', 'worker_id', 'gang_workers', 'workflow_id', 'workflow_member', 'tenant',
                     'type', 'queue', 'attempt', 'started_at', 'started_us', 'charged_gpus', 'charged_gpu_mem_mb', 'cpus',
                     'mem_mb', 'usage_run', 'usage_gpu_us', 'usage_cpu_us', 'usage_memory_mb_us', 'usage_gpu_memory_mb_us',
                     'result', 'borrowed_gpus', 'charged_tpu_chips', 'visibility_deadline', 'preempt_deadline',
                     'retry_delay_ms', 'class', 'rank_base', 'order_base', 'next_attempt_at')
if not f[1] and not f[2] then return {'not_found'} end
local job = {id = f[1], state = f[2], worker_id = f[3] or nil, gang_workers = f[4] or nil, workflow_id = f[5] or nil,
             workflow_member = f[6] or nil, tenant = f[7] or nil, type = f[8] or nil, queue = f[9] or nil, attempt = f[10] or nil,
             started_at = f[11] or nil, started_us = f[12] or nil, charged_gpus = f[13] or nil, charged_gpu_mem_mb = f[14] or nil,
             cpus = f[15] or nil, mem_mb = f[16] or nil, usage_run = f[17] or nil, usage_gpu_us = f[18] or nil,
             usage_cpu_us = f[19] or nil, usage_memory_mb_us = f[20] or nil, usage_gpu_memory_mb_us = f[21] or nil,
             result = f[22] or nil, borrowed_gpus = f[23] or nil, charged_tpu_chips = f[24] or nil,
             visibility_deadline = f[25] or nil, preempt_deadline = f[26] or nil, retry_delay_ms = f[27] or nil,
             class = f[28] or nil, rank_base = f[29] or nil, order_base = f[30] or nil, next_attempt_at = f[31] or nil}
if job.state ~= 'active' then return {'conflict', job.state} end
if worker ~= '' and not held_by(job, worker) then return {'conflict', 'active (held by another worker)'} end
if job.attempt ~= expected then return {'stale', job.attempt} end
if job.workflow_id and #KEYS < 26 then return {'need_keys'} end  -- before any write
local now = now_ms()
local now_s = int_s(now)  -- formatted once ('%d'), not by each redis.call ('%.17g')
if require_expired == '1' and tonumber(job.visibility_deadline or '0') > now then return {'extended'} end
redis.call('ZREM', KEYS[2], job.id)
release_holder(KEYS[12], job)
-- What a failed attempt counts (its minute's failed count; a discarded job's count and
-- finished index) is settled later (settle.lua) from an end line journaled here with
-- the attempt's usage line, in one RPUSH: written in the same step, settled once.
local retried = outcome == 'retry'
local discarding = not (retried or outcome == 'reclaim' or outcome == 'requeue')  -- the last branch below
local end_line = (retried and 'f\t' .. now_s) or (discarding and 'd\t' .. now_s .. '\t' .. job.id) or nil
-- The job's own writes are gathered into one HSET and one HDEL, sent last (the
-- helpers that write on paths that are rare, a gang's reset and a preemption's end,
-- send their own).
local set, del = {}, {'visibility_deadline', 'execution_deadline'}
usage_ended(usage_keys(KEYS, 14), jk, job, now, set, now_s, nil, end_line)  -- before the charge is released
if release_budget({ledger = KEYS[7], tenant_ledger = KEYS[8]}, jk, job, true) then
  for _, f in ipairs(BUDGET_FIELDS) do del[#del + 1] = f end
end
gang_reset(jk, job)  -- one member's failure or release brings the whole gang down
-- A job marked preempting (preempt.lua) leaves that state; released by requeue it
-- counts one preemption (the attempt is given back below, so never against max_attempts).
if job.preempt_deadline then
  redis.call('ZREM', KEYS[9], job.id)
  job.preempt_deadline, job.preempted_for, job.preempt_grace_s, job.preempt_checkpoint = nil, nil, nil, nil
  redis.call('HDEL', jk, 'preempt_deadline', 'preempted_for', 'preempt_grace_s', 'preempt_checkpoint')
  if outcome == 'requeue' then
    job.preemption_count = redis.call('HINCRBY', jk, 'preemption_count', 1)
    redis.call('HINCRBY', KEYS[5], 'preempted', 1)  -- per-queue counter (/metrics, status page)
  end
end
if job.retry_delay_ms and not retried then
  job.retry_delay_ms = nil
  del[#del + 1] = 'retry_delay_ms'
end
if err ~= '' then job.error = err; set[#set + 1] = 'error'; set[#set + 1] = err end
if errors ~= '' then job.errors = errors; set[#set + 1] = 'errors'; set[#set + 1] = errors end
if not discarding then progress_on_retry(jk, job, del) end  -- ecosystem: per-attempt progress, in this call's HDEL
-- retry_delay_ms: the backoff before the next attempt, kept on the job so that the
-- FETCHed retry carries it (ojs-retry.md); any other outcome leaves no retry pending.
if retried then
  local delay = math.max(0, tonumber(due) - now)
  job.state, job.next_attempt_at, job.retry_delay_ms = 'retryable', due, delay
  set[#set + 1] = 'state'; set[#set + 1] = 'retryable'
  set[#set + 1] = 'next_attempt_at'; set[#set + 1] = due
  set[#set + 1] = 'retry_delay_ms'; set[#set + 1] = int_s(delay)
  redis.call('ZADD', KEYS[3], due, job.id)
  emit(KEYS[6], 'job.retrying', job, {'next_attempt_at', due})
elseif outcome == 'reclaim' then
  -- Lost reservation (visibility timeout, dead worker): available again at
  -- once, the attempt stays consumed (ojs-worker-protocol.md §5.5).
  make_available({seq = KEYS[11], heads = KEYS[13], ready = KEYS[10]}, jk, job, now)
  emit(KEYS[6], 'job.available', job, {'reason', 'reservation_lost'})
elseif outcome == 'requeue' then
  -- Released without consuming an attempt (preemption, graceful shutdown).
  job.attempt = tonumber(job.attempt) - 1
  set[#set + 1] = 'attempt'; set[#set + 1] = int_s(job.attempt)
  make_available({seq = KEYS[11], heads = KEYS[13], ready = KEYS[10]}, jk, job, now)
  emit(KEYS[6], 'job.requeued', job, nil)
else
  job.state, job.completed_at, job.discarded_at = 'discarded', now, now
  set[#set + 1] = 'state'; set[#set + 1] = 'discarded'
  set[#set + 1] = 'completed_at'; set[#set + 1] = now_s
  set[#set + 1] = 'discarded_at'; set[#set + 1] = now_s
  if outcome == 'dead_letter' then redis.call('ZADD', KEYS[4], now_s, job.id) end
  emit(KEYS[6], 'job.discarded', job, {'dead_letter', outcome == 'dead_letter' and '1' or '0'})
  if job.workflow_id then workflow_job_ended(workflow_keys(KEYS, 16, KEYS[6]), job, 'failed', now) end
end
if #set > 0 then redis.call('HSET', jk, unpack(set)) end
redis.call('HDEL', jk, unpack(del))
return {'ok'}
