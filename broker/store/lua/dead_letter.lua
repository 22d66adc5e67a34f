-- Dead letter actions, and the admin retry of any finished job that did not complete.
-- retry: a dead-letter job starts over (attempt 0, error history kept) and becomes available.
-- retry_finished (ojs-admin-api.md §7.4): the same for a dead-letter, discarded or
--   cancelled job.
-- discard: the job is removed from the dead letter queue and deleted.
-- Each leaves the finished index of its state (keys.hpp finished_prefix).
-- KEYS (10): 1 job hash, 2 dead, 3 ready prefix (+ the job's class), 4 seq, 5 events, 6 class heads,
--           7 finished prefix (keys.hpp finished_prefix), 8 the job's log (keys.hpp log: deleted with it),
--           9 classes hash, 10 classes version (a discarded job leaves its class)
-- ARGV: id, action (retry | retry_finished | discard)
-- Reply: {'ok'} | {'not_found'} | {'conflict', state} (retry_finished)
-- The job is not in the reply: DeadLetterStore reads it back natively behind the call.
local id, action = ARGV[1], ARGV[2]
local jk = KEYS[1]
local dead = redis.call('ZREM', KEYS[2], id) == 1
if not dead and action ~= 'retry_finished' then return {'not_found'} end
if action == 'discard' then
  redis.call('ZREM', KEYS[7] .. 'discarded', id)
  class_leave(KEYS[9], KEYS[10], redis.call('HGET', jk, 'class'))
  redis.call('DEL', jk, KEYS[8])
  return {'ok'}
end
local job = read_fields(jk, {'id', 'state', 'class', 'rank_base', 'order_base', 'next_attempt_at', 'type', 'queue', 'attempt', 'tenant'})  -- make_available's, emit's
if not job then return {'not_found'} end
if not dead and job.state ~= 'discarded' and job.state ~= 'cancelled' then return {'conflict', job.state} end
redis.call('ZREM', KEYS[7] .. job.state, id)
local from = dead and 'dead_letter' or job.state
local now = now_ms()
job.attempt = 0
redis.call('HSET', jk, 'attempt', 0)
redis.call('HDEL', jk, 'completed_at', 'discarded_at', 'cancelled_at', 'error')
progress_on_retry(jk, job)  -- progress is per attempt: the new one reports from zero
make_available({seq = KEYS[4], heads = KEYS[6], ready = KEYS[3] .. job.class}, jk, job, now)
emit(KEYS[5], 'job.enqueued', job, {'state', 'available', 'from', from})
return {'ok'}
