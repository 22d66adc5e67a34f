-- Discard a job that is still waiting (available, scheduled or retryable) with an
-- error: used when its reservation is missing or expired after reservation_timeout_s.
-- KEYS (18): 1 job hash, 2 ready set of the job's class, 3 delayed, 4 stats, 5 events,
--           6 reservation waits, 7-17 workflow keys (_lib_workflows.lua; 17 the class heads),
--           18 finished prefix (keys.hpp finished_prefix)
-- ARGV: error_json
-- Reply: {'ok', job fields} | {'not_found'} | {'conflict', state}
local err = ARGV[1]
local jk = KEYS[1]
local job = read_job(jk)
if not job then return {'not_found'} end
redis.call('ZREM', KEYS[6], job.id)
if job.state ~= 'available' and job.state ~= 'scheduled' and job.state ~= 'retryable' then return {'conflict', job.state} end
local now = now_ms()
ready_remove(KEYS[17], KEYS[2], job.class, job.id)
redis.call('ZREM', KEYS[3], job.id)
job.state, job.completed_at, job.discarded_at, job.error, job.next_attempt_at = 'discarded', now, now, err, nil
redis.call('HSET', jk, 'state', 'discarded', 'completed_at', now, 'discarded_at', now, 'error', err)
redis.call('HDEL', jk, 'next_attempt_at')
redis.call('HINCRBY', KEYS[4], 'discarded', 1)
job_finished(KEYS[18], job, 'discarded', now)
emit(KEYS[5], 'job.discarded', job, {'dead_letter', '0'})
workflow_job_ended(workflow_keys(KEYS, 7, KEYS[5]), job, 'failed', now)
return {'ok', flat_job(job)}
