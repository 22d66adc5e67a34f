-- Helpers for the scripts that store or touch a job outside the transitions in
-- _lib.lua (push_batch, push_unique, cron_fire, progress). Sorted after _lib.lua,
-- so they build on its emit and make_available: the event record and the rank
-- rule (rank = rank_base + seq) are written once.

-- The keys store_new_job needs: the job's eight keys declared in KEYS (the calling
-- function's, passed in: a library has no global KEYS) from `first`
-- on (job, ready, delayed, seq, events, classes, classes version, class heads). The directories
-- (global slot) are written by the caller before the script (JobDirectory::reserve_ids).
local function new_job_keys(KEYS, first)
  return {job = KEYS[first], ready = KEYS[first + 1], delayed = KEYS[first + 2],
          seq = KEYS[first + 3], events = KEYS[first + 4], classes = KEYS[first + 5], classes_ver = KEYS[first + 6],
          heads = KEYS[first + 7]}
end

-- Stores a new job and makes it available (or scheduled), as PUSH does.
-- k: {job, ready, delayed, seq, events, classes, classes_ver, heads} (keys)
-- job: {id, queue, class, class_json, rank_base, scheduled_at ('' = now), fields = {f, v, ...},
--       escalate_after / reservation_timeout (ms, '' = none; written when k has
--       escalations / reservation_waits)}
-- Returns the job hash as a flat array.
local function store_new_job(k, job, now)
  class_enter(k.classes, k.classes_ver, job.class, job.class_json)
  redis.call('HSET', k.job, 'id', job.id, 'class', job.class, 'rank_base', job.rank_base, 'attempt', 0, 'created_at', now,
             unpack(job.fields))
  -- The job as _lib's helpers see it, from what this script holds (no read back).
  local held = {id = job.id, queue = job.queue, class = job.class, rank_base = job.rank_base, attempt = '0'}
  for i = 1, #job.fields, 2 do
    if held[job.fields[i]] == nil then held[job.fields[i]] = job.fields[i + 1] end
  end
  if job.scheduled_at ~= '' and tonumber(job.scheduled_at) > now then
    redis.call('HSET', k.job, 'state', 'scheduled', 'scheduled_at', job.scheduled_at)
    redis.call('ZADD', k.delayed, job.scheduled_at, job.id)
    emit(k.events, 'job.enqueued', held, {'state', 'scheduled'})
  else
    make_available(k, k.job, held, now)
    emit(k.events, 'job.enqueued', held, {'state', 'available'})
  end
  -- Scheduling indexes in the same step (store: a crash never leaves them out).
  if k.escalations and (job.escalate_after or '') ~= '' then
    redis.call('ZADD', k.escalations, now + tonumber(job.escalate_after), job.id)
  end
  if k.reservation_waits and (job.reservation_timeout or '') ~= '' then
    redis.call('ZADD', k.reservation_waits, now + tonumber(job.reservation_timeout), job.id)
  end
  return redis.call('HGETALL', k.job)
end

-- Whether a new job may take this id in its queue: no job hash under it (the
-- directory, in the global slot, was checked by JobDirectory::reserve_ids before).
local function id_is_free(job_hash)
  return redis.call('EXISTS', job_hash) == 0
end

-- Reservation extension (BEAT, progress): the job's own visibility timeout, else
-- `default_vis`, never past its execution deadline. Returns the new deadline.
local function extend_visibility(jk, active_key, id, now, default_vis)
  local f = redis.call('HMGET', jk, 'visibility_timeout_ms', 'execution_deadline')
  local deadline = now + (tonumber(f[1] or '') or default_vis)
  local cap = tonumber(f[2] or '')
  if cap and cap < deadline then deadline = cap end
  redis.call('HSET', jk, 'visibility_deadline', deadline)
  redis.call('ZADD', active_key, deadline, id)
  return deadline
end

-- Progress (spec/ojs-progress.md 8.1, 5.3): a completed job that reported progress
-- ends at 1.0; a new attempt starts without the previous attempt's progress.
-- progress_base / progress_base_at: the attempt's first report above 0 (progress.lua),
-- from which the start estimate measures the job's pace.
local PROGRESS_FIELDS = {'progress', 'progress_data', 'progress_message', 'progress_updated_at', 'progress_event_at',
                         'progress_base', 'progress_base_at'}
local function progress_on_complete(jk)
  if redis.call('HEXISTS', jk, 'progress') == 1 then redis.call('HSET', jk, 'progress', '1') end
end
-- Clears the attempt's progress from the hash and from `job`, the caller's copy.
-- del: the caller's list of fields to delete, sent in its own HDEL (fail.lua); without
-- it the fields are deleted here.
local function progress_on_retry(jk, job, del)
  for _, f in ipairs(PROGRESS_FIELDS) do
    job[f] = nil
    if del then del[#del + 1] = f end
  end
  if not del then redis.call('HDEL', jk, unpack(PROGRESS_FIELDS)) end
end

-- CANCEL of one job (cancel.lua, and a workflow's cancel for each of its jobs):
-- any non-terminal state -> cancelled, its indexes and GPU budget released.
-- c: {ready_prefix, heads, delayed, active, stats, events, ledger, tenant_ledger, finished_prefix,
--     on_hold (keys.hpp on_hold: a held job leaves it, so it counts in no depth),
--     usage (usage_keys: a running job's resource-seconds are charged)}
-- A running job's process outlives its record: the job keeps its worker and is marked
-- stop_action (cancel: SIGTERM, its grace, SIGKILL; kill: SIGKILL now), which its
-- worker is told on its next contact and which keeps its devices charged to that
-- worker until the worker reports the process gone (process_gone.lua) or is lost.
local function cancel_job(c, jk, job, now, stop)
  if job.state == 'active' then
    usage_ended(c.usage, jk, job, now)
    job.stop_action = stop or 'cancel'
    redis.call('HSET', jk, 'stop_action', job.stop_action)
  elseif job.stop_action then  -- left by an earlier run's cancel (the job was retried since): not this one's
    job.stop_action = nil
    redis.call('HDEL', jk, 'stop_action')
  end
  release_budget({ledger = c.ledger, tenant_ledger = c.tenant_ledger}, jk, job)
  ready_remove(c.heads, c.ready_prefix .. job.class, job.class, job.id)
  redis.call('ZREM', c.delayed, job.id)
  redis.call('ZREM', c.active, job.id)
  redis.call('ZREM', c.on_hold, job.id)
  job.state, job.cancelled_at = 'cancelled', now
  job.visibility_deadline, job.execution_deadline, job.next_attempt_at = nil, nil, nil
  redis.call('HSET', jk, 'state', 'cancelled', 'cancelled_at', now)
  redis.call('HDEL', jk, 'visibility_deadline', 'execution_deadline', 'next_attempt_at')
  redis.call('HINCRBY', c.stats, 'cancelled', 1)
  job_finished(c.finished_prefix, job, 'cancelled', now)
  emit(c.events, 'job.cancelled', job, nil)
end
