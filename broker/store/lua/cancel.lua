-- CANCEL: any non-terminal state -> cancelled.
-- ARGV: prefix, id
local prefix, id = ARGV[1], ARGV[2]
local jk = job_key(prefix, id)
local f = redis.call('HMGET', jk, 'state', 'class')
if not f[1] then return {'not_found'} end
if is_terminal(f[1]) then return {'conflict', f[1]} end
local now = now_ms()
release_budget(prefix, jk)
redis.call('ZREM', ready_key(prefix, f[2]), id)
redis.call('ZREM', prefix .. 'delayed', id)
redis.call('ZREM', prefix .. 'active', id)
redis.call('HSET', jk, 'state', 'cancelled', 'cancelled_at', now)
redis.call('HDEL', jk, 'visibility_deadline', 'execution_deadline', 'next_attempt_at')
redis.call('HINCRBY', prefix .. 'stats', 'cancelled', 1)
emit(prefix, 'job.cancelled', id, nil)
return {'ok', job_snapshot(prefix, id)}
