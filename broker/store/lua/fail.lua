-- NACK / reclaim: the broker decided the outcome from a snapshot; apply it if the
-- job is still the attempt that snapshot saw (compare-and-set on attempt).
-- KEYS (26): 1 job hash, 2 active, 3 delayed, 4 dead, 5 stats, 6 events, 7 ledger,
--            8 tenant ledger, 9 preempting, 10 ready set of the job's class, 11 seq,
--            12 held prefix (keys.hpp held_prefix), 13-23 workflow keys (_lib_workflows.lua; 23 the class heads),
--            24 finished prefix (keys.hpp finished_prefix), 25-26 the usage journal and hash (_lib_accounting.lua usage_keys)
-- ARGV: expected_attempt, outcome (retry|discard|dead_letter|requeue|reclaim), due_ms (retry),
--       error_json, errors_json, require_expired ('1' = only if the visibility deadline
--       has passed: used by the reaper), worker_id ('' = any)
-- Reply: {'ok', job fields} | {'not_found'} | {'conflict', state} | {'stale', attempt} | {'extended'}
local expected, outcome, due, err, errors, require_expired, worker =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local jk = KEYS[1]
local job = read_job(jk)
if not job then return {'not_found'} end
if job.state ~= 'active' then return {'conflict', job.state} end
if worker ~= '' and not held_by(job, worker) then return {'conflict', 'active (held by another worker)'} end
if job.attempt ~= expected then return {'stale', job.attempt} end
local now = now_ms()
if require_expired == '1' and tonumber(job.visibility_deadline or '0') > now then return {'extended'} end
redis.call('ZREM', KEYS[2], job.id)
release_holder(KEYS[12], job)
usage_ended(usage_keys(KEYS, 25), jk, job, now)  -- before the charge is released
local charged = release_budget({ledger = KEYS[7], tenant_ledger = KEYS[8]}, jk, job, true)
gang_reset(jk, job)  -- one member's failure or release brings the whole gang down
job.visibility_deadline, job.execution_deadline = nil, nil
local gone = {'visibility_deadline', 'execution_deadline'}
if charged then for _, f in ipairs(BUDGET_FIELDS) do gone[#gone + 1] = f end end  -- one HDEL for all
redis.call('HDEL', jk, unpack(gone))
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
if job.retry_delay_ms and outcome ~= 'retry' then
  job.retry_delay_ms = nil
  redis.call('HDEL', jk, 'retry_delay_ms')
end
if err ~= '' then job.error = err; redis.call('HSET', jk, 'error', err) end
if errors ~= '' then job.errors = errors; redis.call('HSET', jk, 'errors', errors) end
if outcome == 'retry' or outcome == 'requeue' or outcome == 'reclaim' then  -- ecosystem: per-attempt progress
  progress_on_retry(jk, job)
end
-- retry_delay_ms: the backoff before the next attempt, kept on the job so that the
-- FETCHed retry carries it (ojs-retry.md); any other outcome leaves no retry pending.
if outcome == 'retry' then
  local delay = math.max(0, tonumber(due) - now)
  job.state, job.next_attempt_at, job.retry_delay_ms = 'retryable', due, delay
  redis.call('HSET', jk, 'state', 'retryable', 'next_attempt_at', due, 'retry_delay_ms', delay)
  redis.call('ZADD', KEYS[3], due, job.id)
  count_minute(KEYS[5], 'failed', now)
  emit(KEYS[6], 'job.retrying', job, {'next_attempt_at', due})
elseif outcome == 'reclaim' then
  -- Lost reservation (visibility timeout, dead worker): available again at
  -- once, the attempt stays consumed (ojs-worker-protocol.md §5.5).
  make_available({seq = KEYS[11], heads = KEYS[23], ready = KEYS[10]}, jk, job, now)
  emit(KEYS[6], 'job.available', job, {'reason', 'reservation_lost'})
elseif outcome == 'requeue' then
  -- Released without consuming an attempt (preemption, graceful shutdown).
  job.attempt = tonumber(job.attempt) - 1
  redis.call('HSET', jk, 'attempt', job.attempt)
  make_available({seq = KEYS[11], heads = KEYS[23], ready = KEYS[10]}, jk, job, now)
  emit(KEYS[6], 'job.requeued', job, nil)
else
  job.state, job.completed_at, job.discarded_at = 'discarded', now, now
  redis.call('HSET', jk, 'state', 'discarded', 'completed_at', now, 'discarded_at', now)
  redis.call('HINCRBY', KEYS[5], 'discarded', 1)
  count_minute(KEYS[5], 'failed', now)
  job_finished(KEYS[24], job, 'discarded', now)
  if outcome == 'dead_letter' then redis.call('ZADD', KEYS[4], now, job.id) end
  emit(KEYS[6], 'job.discarded', job, {'dead_letter', outcome == 'dead_letter' and '1' or '0'})
  workflow_job_ended(workflow_keys(KEYS, 13, KEYS[6]), job, 'failed', now)
end
return {'ok', flat_job(job)}
