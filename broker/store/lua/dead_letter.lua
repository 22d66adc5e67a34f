-- Dead letter actions.
-- retry: the job starts over (attempt 0, error history kept) and becomes available.
-- discard: the job is removed from the dead letter queue and deleted.
-- KEYS (6): 1 job hash, 2 dead, 3 ready prefix (+ the job's class), 4 seq, 5 events, 6 class heads
-- ARGV: id, action (retry | discard)
-- Reply: {'ok', job fields ({} after discard)} | {'not_found'}
local id, action = ARGV[1], ARGV[2]
local jk = KEYS[1]
if redis.call('ZREM', KEYS[2], id) == 0 then return {'not_found'} end
if action == 'discard' then
  redis.call('DEL', jk)
  return {'ok', {}}
end
local job = read_job(jk)
if not job then return {'not_found'} end
local now = now_ms()
job.attempt, job.completed_at, job.discarded_at, job.error = 0, nil, nil, nil
redis.call('HSET', jk, 'attempt', 0)
redis.call('HDEL', jk, 'completed_at', 'discarded_at', 'error')
make_available({seq = KEYS[4], heads = KEYS[6], ready = KEYS[3] .. job.class}, jk, job, now)
emit(KEYS[5], 'job.enqueued', job, {'state', 'available', 'from', 'dead_letter'})
return {'ok', flat_job(job)}
