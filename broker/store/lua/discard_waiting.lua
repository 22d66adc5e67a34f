-- Discard a job that is still waiting (available, scheduled or retryable) with an
-- error: used when its reservation is missing or expired after reservation_timeout_s.
-- KEYS (8 + 11n): 1 job hash, 2 ready set of the job's class, 3 delayed, 4 stats, 5 events,
--           6 reservation waits, 7 finished prefix (keys.hpp finished_prefix), 8 class heads,
--           n = 0 or 1: 9-19 the workflow keys (_lib_workflows.lua), sent only for a
--           workflow's job: without them such a job answers {'need_keys'}, nothing written.
-- ARGV: error_json
-- Reply: {'ok'} | {'not_found'} | {'conflict', state} | {'need_keys'}
-- The job is not in the reply: PreemptionStore reads it back natively behind the call.
local err = ARGV[1]
local jk = KEYS[1]
local job = read_fields(jk, {'id', 'state', 'class', 'workflow_id', 'workflow_member', 'type', 'queue', 'attempt', 'tenant'})  -- and emit's
if not job then return {'not_found'} end
if job.workflow_id and #KEYS < 19 then return {'need_keys'} end  -- before any write
redis.call('ZREM', KEYS[6], job.id)
if job.state ~= 'available' and job.state ~= 'scheduled' and job.state ~= 'retryable' then return {'conflict', job.state} end
local now = now_ms()
ready_remove(KEYS[8], KEYS[2], job.class, job.id)
redis.call('ZREM', KEYS[3], job.id)
redis.call('HSET', jk, 'state', 'discarded', 'completed_at', now, 'discarded_at', now, 'error', err)
redis.call('HDEL', jk, 'next_attempt_at')
redis.call('HINCRBY', KEYS[4], 'discarded', 1)
job_finished(KEYS[7], job, 'discarded', now)
emit(KEYS[5], 'job.discarded', job, {'dead_letter', '0'})
if job.workflow_id then workflow_job_ended(workflow_keys(KEYS, 9, KEYS[5]), job, 'failed', now) end
return {'ok'}
