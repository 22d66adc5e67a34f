-- One cron tick: enqueues the cron's job at most once per tick, whichever broker
-- runs it (compare-and-set on next_run_at), applying the overlap policy.
-- KEYS[1] the cron's state hash (next_run_at, last_run_at, run_count, last_job)
-- KEYS[2] job directory, KEYS[3] queue directory,
-- KEYS[4] new job hash, KEYS[5] its class's ready set, KEYS[6] delayed, KEYS[7] seq,
-- KEYS[8] events, KEYS[9] classes, KEYS[10] classes version   (the template's queue)
-- KEYS[11] the previous job's hash (KEYS[1] again when there is none)
-- ARGV: 1 tick (next_run_at ms the caller saw), 2 following tick ms, 3 overlap policy
--       (skip | allow | enqueue), 4 cron name, 5 id, 6 queue, 7 class, 8 class_json,
--       9 rank_base, then field/value pairs
-- Reply: {'ok', job} | {'skipped', previous id} | {'stale'} (another broker fired this tick)
local state = KEYS[1]
if redis.call('HGET', state, 'next_run_at') ~= ARGV[1] then return {'stale'} end
redis.call('HSET', state, 'next_run_at', ARGV[2], 'last_run_at', ARGV[1])
if KEYS[11] ~= state then
  local previous = redis.call('HMGET', KEYS[11], 'state', 'id')
  -- skip: the previous run has not finished (active, or still waiting to start).
  local unfinished = previous[1] and not is_terminal(previous[1])
  if ARGV[3] == 'skip' and unfinished then
    redis.call('XADD', KEYS[8], 'MAXLEN', '~', '10000', '*', 'type', 'cron.skipped', 'job_id', previous[2] or '',
               'cron_name', ARGV[4], 'reason', 'previous run not finished')
    return {'skipped', previous[2] or ''}
  end
end
local fields = {}
for i = 10, #ARGV do table.insert(fields, ARGV[i]) end
local k = new_job_keys(KEYS[2], KEYS[3], 4)
if not id_is_free(k.job_dir, k.job, ARGV[5], ARGV[6]) then return {'stale'} end
local snapshot = store_new_job(k, {id = ARGV[5], queue = ARGV[6], class = ARGV[7], class_json = ARGV[8], rank_base = ARGV[9],
                                   scheduled_at = '', fields = fields}, now_ms())
redis.call('HSET', state, 'last_job', ARGV[6] .. ' ' .. ARGV[5])
redis.call('HINCRBY', state, 'run_count', 1)
return {'ok', snapshot}
