-- ACK: active -> completed.
-- ARGV: prefix, id, result_json ('' = none), worker_id ('' = any: plain OJS ACKs carry none)
local prefix, id, result, worker = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local jk = job_key(prefix, id)
local f = redis.call('HMGET', jk, 'state', 'started_at', 'worker_id')
if not f[1] then return {'not_found'} end
if f[1] ~= 'active' then return {'conflict', f[1]} end
-- A worker whose reservation expired must not complete the job another worker now holds.
if worker ~= '' and f[3] ~= worker then return {'conflict', 'active (held by another worker)'} end
local now = now_ms()
release_budget(prefix, jk)
redis.call('HSET', jk, 'state', 'completed', 'completed_at', now)
if result ~= '' then redis.call('HSET', jk, 'result', result) end
progress_on_complete(jk)  -- ecosystem: progress ends at 1.0
redis.call('HDEL', jk, 'error', 'visibility_deadline', 'execution_deadline', 'next_attempt_at')
redis.call('ZREM', prefix .. 'active', id)
redis.call('HINCRBY', prefix .. 'stats', 'completed', 1)
emit(prefix, 'job.completed', id, {'duration_ms', tostring(now - tonumber(f[2] or now))})
return {'ok', job_snapshot(prefix, id)}
