-- One cron tick: enqueues the cron's job at most once per tick, whichever broker
-- runs it (compare-and-set on next_run_at), applying the overlap policy; or one
-- deferred tick of the enqueue policy, once the previous run has finished.
-- KEYS (13): 1 the cron's state hash (next_run_at, last_run_at, run_count, last_job, deferred)
--   2 job directory, 3 queue directory,
--   4 new job hash, 5 its class's ready set, 6 delayed, 7 seq,
--   8 events, 9 classes, 10 classes version   (the template's queue)
--   11 the previous job's hash (KEYS[1] again when there is none),
--   12 escalations, 13 reservation waits (the template's queue)
-- ARGV: 1 tick (next_run_at ms the caller saw; for 'deferred', the oldest deferred tick it saw),
--       2 following tick ms, 3 overlap policy (skip | allow | enqueue | cancel_previous: the caller has
--       cancelled the previous run already, so it enqueues like allow) or 'deferred' (a deferred tick's turn),
--       4 cron name, 5 id, 6 queue, 7 class, 8 class_json,
--       9 rank_base, 10 escalate_after_ms ('' = none), 11 reservation_timeout_ms ('' = none),
--       then field/value pairs
-- Reply: {'ok', job} | {'skipped', previous id} | {'deferred', previous id} | {'stale'} (another broker fired
--        this tick, or the deferred tick is not due yet)
local state = KEYS[1]
local previous_id, unfinished = '', false
if KEYS[11] ~= state then
  local previous = redis.call('HMGET', KEYS[11], 'state', 'id')
  unfinished = previous[1] and not is_terminal(previous[1]) or false
  previous_id = previous[2] or ''
end
-- enqueue policy: ticks that met a running (or waiting) previous run wait here, oldest first,
-- comma-separated; at most 1000 (then the oldest go).
local deferred = redis.call('HGET', state, 'deferred') or ''
if ARGV[3] == 'deferred' then
  local oldest = string.match(deferred, '^[^,]+')
  if unfinished or oldest ~= ARGV[1] then return {'stale'} end
  local rest = string.sub(deferred, #oldest + 2)
  if rest == '' then redis.call('HDEL', state, 'deferred') else redis.call('HSET', state, 'deferred', rest) end
else
  if redis.call('HGET', state, 'next_run_at') ~= ARGV[1] then return {'stale'} end
  redis.call('HSET', state, 'next_run_at', ARGV[2], 'last_run_at', ARGV[1])
  -- skip: the previous run has not finished (active, or still waiting to start).
  if unfinished and ARGV[3] == 'skip' then
    emit(KEYS[8], 'cron.skipped', {id = previous_id, queue = ARGV[6]}, {'cron_name', ARGV[4], 'reason', 'overlap_skip'})
    return {'skipped', previous_id}
  end
  if ARGV[3] == 'enqueue' and (unfinished or deferred ~= '') then
    deferred = deferred == '' and ARGV[1] or deferred .. ',' .. ARGV[1]
    local _, commas = string.gsub(deferred, ',', ',')
    if commas >= 1000 then deferred = string.sub(deferred, string.find(deferred, ',') + 1) end
    redis.call('HSET', state, 'deferred', deferred)
    emit(KEYS[8], 'cron.deferred', {id = previous_id, queue = ARGV[6]}, {'cron_name', ARGV[4], 'reason', 'overlap_enqueue'})
    return {'deferred', previous_id}
  end
end
local fields = {}
for i = 12, #ARGV do table.insert(fields, ARGV[i]) end
local k = new_job_keys(KEYS[2], KEYS[3], 4)
k.escalations, k.reservation_waits = KEYS[12], KEYS[13]
if not id_is_free(k.job_dir, k.job, ARGV[5], ARGV[6]) then return {'stale'} end
local snapshot = store_new_job(k, {id = ARGV[5], queue = ARGV[6], class = ARGV[7], class_json = ARGV[8], rank_base = ARGV[9],
                                   scheduled_at = '', fields = fields, escalate_after = ARGV[10],
                                   reservation_timeout = ARGV[11]}, now_ms())
redis.call('HSET', state, 'last_job', ARGV[6] .. ' ' .. ARGV[5])
redis.call('HINCRBY', state, 'run_count', 1)
emit(KEYS[8], 'cron.triggered', {id = ARGV[5], queue = ARGV[6]}, {'cron_name', ARGV[4], 'scheduled_time', ARGV[1]})
return {'ok', snapshot}
