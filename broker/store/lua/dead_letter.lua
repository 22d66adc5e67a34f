-- Dead letter actions. ARGV: prefix, id, action (retry | discard)
-- retry: the job starts over (attempt 0, error history kept) and becomes available.
-- discard: the job is removed from the dead letter queue and deleted.
local prefix, id, action = ARGV[1], ARGV[2], ARGV[3]
if redis.call('ZSCORE', prefix .. 'dead', id) == false then return {'not_found'} end
local jk = job_key(prefix, id)
redis.call('ZREM', prefix .. 'dead', id)
if action == 'discard' then
  redis.call('DEL', jk)
  return {'ok', {}}
end
local now = now_ms()
redis.call('HSET', jk, 'attempt', 0)
redis.call('HDEL', jk, 'completed_at', 'discarded_at', 'error')
make_available(prefix, id, now)
emit(prefix, 'job.enqueued', id, {'state', 'available', 'from', 'dead_letter'})
return {'ok', job_snapshot(prefix, id)}
