-- PROCESS_GONE: the worker that ran a cancelled or killed job reports its process gone
-- (its NACK or ACK after the stop, or the broker declared the worker lost): the job's
-- devices stop being charged to that worker (cancel_job's stop_action ends, and the
-- job leaves the worker's held set).
-- KEYS (2): 1 job hash, 2 the worker's held set in the job's queue (keys.hpp held)
-- ARGV: 1 worker_id
-- Reply: 1 when a stop was pending for this worker and has ended, else 0
local f = redis.call('HMGET', KEYS[1], 'stop_action', 'worker_id', 'id')
if not f[1] or f[2] ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 'stop_action')
redis.call('SREM', KEYS[2], f[3])
return 1
