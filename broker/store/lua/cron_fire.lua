-- One cron tick, the cron's part (global slot): at most once per tick, whichever
-- broker runs it (compare-and-set on next_run_at), applying the overlap policy.
-- The job itself is pushed by the caller afterwards, in its queue's slot
-- (CronStore::fire): a crash in between loses that one run, never doubles it.
-- KEYS (1): 1 the cron's state hash (next_run_at, last_run_at, run_count, last_job)
-- ARGV: 1 tick (next_run_at ms the caller saw), 2 following tick ms, 3 overlap policy
--       (skip | allow | enqueue), 4 the previous run's state as the caller read it
--       ('' = none), 5 the new job as "queue id"
-- Reply: {'ok'} | {'skipped'} | {'stale'} (another broker fired this tick)
local state = KEYS[1]
if redis.call('HGET', state, 'next_run_at') ~= ARGV[1] then return {'stale'} end
redis.call('HSET', state, 'next_run_at', ARGV[2], 'last_run_at', ARGV[1])
-- skip: the previous run has not finished (active, or still waiting to start).
if ARGV[3] == 'skip' and ARGV[4] ~= '' and not is_terminal(ARGV[4]) then return {'skipped'} end
redis.call('HSET', state, 'last_job', ARGV[5])
redis.call('HINCRBY', state, 'run_count', 1)
return {'ok'}
