-- One cron tick, the cron's part (global slot): at most once per tick, whichever
-- broker runs it (compare-and-set on next_run_at), applying the overlap policy;
-- or one deferred tick of the enqueue policy, once the previous run has finished.
-- The job itself is pushed by the caller afterwards, in its queue's slot
-- (CronStore::fire): a crash in between loses that one run, never doubles it.
-- KEYS (3): 1 the cron's state hash (next_run_at, last_run_at, run_count, last_job, deferred),
--   2 the due zset (name -> next_run_at ms), 3 the set of crons with deferred ticks
-- ARGV: 1 tick (next_run_at ms the caller saw; for 'deferred', the oldest deferred tick it saw),
--       2 following tick ms, 3 overlap policy (skip | allow | enqueue | cancel_previous: the caller has
--       cancelled the previous run already, so it enqueues like allow) or 'deferred' (a deferred tick's turn),
--       4 the previous run's state as the caller read it ('' = none), 5 the new job as "queue id",
--       6 the cron's name (its member in KEYS[2] and KEYS[3])
-- Reply: {'ok'} | {'skipped'} | {'deferred'} | {'stale'} (another broker fired this tick, or the
--        deferred tick is not due yet)
local state = KEYS[1]
local unfinished = ARGV[4] ~= '' and not is_terminal(ARGV[4])
-- enqueue policy: ticks that met a running (or waiting) previous run wait here, oldest first,
-- comma-separated; at most 1000 (then the oldest go).
local deferred = redis.call('HGET', state, 'deferred') or ''
if ARGV[3] == 'deferred' then
  local oldest = string.match(deferred, '^[^,]+')
  if unfinished or oldest ~= ARGV[1] then return {'stale'} end
  local rest = string.sub(deferred, #oldest + 2)
  if rest == '' then
    redis.call('HDEL', state, 'deferred')
    redis.call('SREM', KEYS[3], ARGV[6])
  else
    redis.call('HSET', state, 'deferred', rest)
  end
else
  if redis.call('HGET', state, 'next_run_at') ~= ARGV[1] then return {'stale'} end
  redis.call('HSET', state, 'next_run_at', ARGV[2], 'last_run_at', ARGV[1])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[6])
  -- skip: the previous run has not finished (active, or still waiting to start).
  if unfinished and ARGV[3] == 'skip' then return {'skipped'} end
  if ARGV[3] == 'enqueue' and (unfinished or deferred ~= '') then
    deferred = deferred == '' and ARGV[1] or deferred .. ',' .. ARGV[1]
    local _, commas = string.gsub(deferred, ',', ',')
    if commas >= 1000 then deferred = string.sub(deferred, string.find(deferred, ',') + 1) end
    redis.call('HSET', state, 'deferred', deferred)
    redis.call('SADD', KEYS[3], ARGV[6])
    return {'deferred'}
  end
end
redis.call('HSET', state, 'last_job', ARGV[5])
redis.call('HINCRBY', state, 'run_count', 1)
return {'ok'}
