-- CANCEL: any non-terminal state -> cancelled.
-- KEYS (8): 1 job hash, 2 ready prefix (+ the job's class), 3 delayed, 4 active, 5 stats,
--           6 events, 7 ledger, 8 tenant ledger
-- ARGV: (none)
-- Reply: {'ok', job fields} | {'not_found'} | {'conflict', state}
local jk = KEYS[1]
local job = read_job(jk)
if not job then return {'not_found'} end
if is_terminal(job.state) then return {'conflict', job.state} end
local now = now_ms()
release_budget({ledger = KEYS[7], tenant_ledger = KEYS[8]}, jk, job)
redis.call('ZREM', KEYS[2] .. job.class, job.id)
redis.call('ZREM', KEYS[3], job.id)
redis.call('ZREM', KEYS[4], job.id)
job.state, job.cancelled_at = 'cancelled', now
job.visibility_deadline, job.execution_deadline, job.next_attempt_at = nil, nil, nil
redis.call('HSET', jk, 'state', 'cancelled', 'cancelled_at', now)
redis.call('HDEL', jk, 'visibility_deadline', 'execution_deadline', 'next_attempt_at')
redis.call('HINCRBY', KEYS[5], 'cancelled', 1)
emit(KEYS[6], 'job.cancelled', job, nil)
return {'ok', flat_job(job)}
