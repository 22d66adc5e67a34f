-- Discard a job that is still waiting (available, scheduled or retryable) with an
-- error: used when its reservation is missing or expired after reservation_timeout_s.
-- ARGV: prefix, id, error_json
local prefix, id, err = ARGV[1], ARGV[2], ARGV[3]
local jk = job_key(prefix, id)
local f = redis.call('HMGET', jk, 'state', 'class')
if not f[1] then return {'not_found'} end
if f[1] ~= 'available' and f[1] ~= 'scheduled' and f[1] ~= 'retryable' then return {'conflict', f[1]} end
local now = now_ms()
redis.call('ZREM', ready_key(prefix, f[2]), id)
redis.call('ZREM', prefix .. 'delayed', id)
redis.call('HSET', jk, 'state', 'discarded', 'completed_at', now, 'discarded_at', now, 'error', err)
redis.call('HDEL', jk, 'next_attempt_at')
redis.call('HINCRBY', prefix .. 'stats', 'discarded', 1)
emit(prefix, 'job.discarded', id, {'dead_letter', '0'})
return {'ok', job_snapshot(prefix, id)}
