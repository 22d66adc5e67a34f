-- NACK / reclaim: the broker decided the outcome from a snapshot; apply it if the
-- job is still the attempt that snapshot saw (compare-and-set on attempt).
-- ARGV: prefix, id, expected_attempt, outcome (retry|discard|dead_letter|requeue|reclaim),
--       due_ms (retry), error_json, errors_json, require_expired ('1' = only if the
--       visibility deadline has passed: used by the reaper), worker_id ('' = any)
local prefix, id, expected, outcome, due, err, errors, require_expired, worker =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local jk = job_key(prefix, id)
local f = redis.call('HMGET', jk, 'state', 'attempt', 'visibility_deadline', 'worker_id')
if not f[1] then return {'not_found'} end
if f[1] ~= 'active' then return {'conflict', f[1]} end
if worker ~= '' and f[4] ~= worker then return {'conflict', 'active (held by another worker)'} end
if f[2] ~= expected then return {'stale', f[2]} end
local now = now_ms()
if require_expired == '1' and tonumber(f[3] or '0') > now then return {'extended'} end
redis.call('ZREM', prefix .. 'active', id)
release_budget(prefix, jk)
redis.call('HDEL', jk, 'visibility_deadline', 'execution_deadline')
-- A job marked preempting (preempt.lua) leaves that state; released by requeue it
-- counts one preemption (the attempt is given back below, so never against max_attempts).
if redis.call('HEXISTS', jk, 'preempt_deadline') == 1 then
  redis.call('ZREM', prefix .. 'preempting', id)
  redis.call('HDEL', jk, 'preempt_deadline', 'preempted_for', 'preempt_grace_s', 'preempt_checkpoint')
  if outcome == 'requeue' then
    redis.call('HINCRBY', jk, 'preemption_count', 1)
    redis.call('HINCRBY', prefix .. 'stats', 'preempted', 1)  -- per-queue counter (/metrics, status page)
  end
end
if err ~= '' then redis.call('HSET', jk, 'error', err) end
if errors ~= '' then redis.call('HSET', jk, 'errors', errors) end
if outcome == 'retry' or outcome == 'requeue' then progress_on_retry(jk) end  -- ecosystem: per-attempt progress
if outcome == 'retry' then
  redis.call('HSET', jk, 'state', 'retryable', 'next_attempt_at', due)
  redis.call('ZADD', prefix .. 'delayed', due, id)
  emit(prefix, 'job.retrying', id, {'next_attempt_at', due})
elseif outcome == 'reclaim' then
  -- [spec #17] Lost reservation (visibility timeout, dead worker): available again at
  -- once, the attempt stays consumed (ojs-worker-protocol.md §5.5).
  make_available(prefix, id, now)
  emit(prefix, 'job.available', id, {'reason', 'reservation_lost'})
elseif outcome == 'requeue' then
  -- Released without consuming an attempt (preemption, graceful shutdown).
  redis.call('HINCRBY', jk, 'attempt', -1)
  make_available(prefix, id, now)
  emit(prefix, 'job.requeued', id, nil)
else
  redis.call('HSET', jk, 'state', 'discarded', 'completed_at', now, 'discarded_at', now)
  redis.call('HINCRBY', prefix .. 'stats', 'discarded', 1)
  if outcome == 'dead_letter' then redis.call('ZADD', prefix .. 'dead', now, id) end
  emit(prefix, 'job.discarded', id, {'dead_letter', outcome == 'dead_letter' and '1' or '0'})
end
return {'ok', job_snapshot(prefix, id)}
