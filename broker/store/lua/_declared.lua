-- Helpers that take every key they touch as an argument, for scripts that
-- declare all their keys in KEYS (push_batch and the scripts that follow it).
-- Sorted before _lib.lua, whose prefix-based helpers delegate here so that each
-- rule (rank = rank_base + seq; the event record) is written once.

-- Makes a job fetchable: next sequence number, rank = rank base + seq.
-- ready_key_of(class) names the ready set of the job's class.
local function make_available_in(jk, seq_key, ready_key_of, id, now)
  local seq = redis.call('INCR', seq_key)
  local f = redis.call('HMGET', jk, 'rank_base', 'class')
  redis.call('HSET', jk, 'state', 'available', 'enqueued_at', now)
  redis.call('HDEL', jk, 'next_attempt_at')
  redis.call('ZADD', ready_key_of(f[2]), tonumber(f[1]) + seq, id)
end

-- Appends one job event to a queue's event stream.
local function emit_to(events_key, jk, event_type, id, extra)
  local fields = {'type', event_type, 'job_id', id}
  local meta = redis.call('HMGET', jk, 'type', 'queue', 'attempt')
  table.insert(fields, 'job_type'); table.insert(fields, meta[1] or '')
  table.insert(fields, 'queue'); table.insert(fields, meta[2] or '')
  table.insert(fields, 'attempt'); table.insert(fields, meta[3] or '0')
  if extra then
    for i = 1, #extra do table.insert(fields, extra[i]) end
  end
  redis.call('XADD', events_key, 'MAXLEN', '~', '10000', '*', unpack(fields))
end

-- The keys store_new_job needs: the two directories, then the job's seven keys
-- declared in KEYS from `first` on (job, ready, delayed, seq, events, classes, classes version).
local function new_job_keys(job_dir, queue_dir, first)
  return {job_dir = job_dir, queue_dir = queue_dir, job = KEYS[first], ready = KEYS[first + 1], delayed = KEYS[first + 2],
          seq = KEYS[first + 3], events = KEYS[first + 4], classes = KEYS[first + 5], classes_ver = KEYS[first + 6]}
end

-- Stores a new job and makes it available (or scheduled), as PUSH does.
-- k: {job_dir, queue_dir, job, ready, delayed, seq, events, classes, classes_ver} (keys)
-- job: {id, queue, class, class_json, rank_base, scheduled_at ('' = now), fields = {f, v, ...}}
-- Returns the job hash as a flat array.
local function store_new_job(k, job, now)
  redis.call('HSET', k.job_dir, job.id, job.queue)
  redis.call('HSETNX', k.queue_dir, job.queue, now)
  if redis.call('HSETNX', k.classes, job.class, job.class_json) == 1 then redis.call('INCR', k.classes_ver) end
  redis.call('HSET', k.job, 'id', job.id, 'class', job.class, 'rank_base', job.rank_base, 'attempt', 0, 'created_at', now,
             unpack(job.fields))
  if job.scheduled_at ~= '' and tonumber(job.scheduled_at) > now then
    redis.call('HSET', k.job, 'state', 'scheduled', 'scheduled_at', job.scheduled_at)
    redis.call('ZADD', k.delayed, job.scheduled_at, job.id)
    emit_to(k.events, k.job, 'job.enqueued', job.id, {'state', 'scheduled'})
  else
    make_available_in(k.job, k.seq, function() return k.ready end, job.id, now)
    emit_to(k.events, k.job, 'job.enqueued', job.id, {'state', 'available'})
  end
  return redis.call('HGETALL', k.job)
end

-- Whether a new job may take this id: no job hash under it, and the directory
-- does not give it to another queue (an entry of this queue without a job hash is
-- a leftover of an interrupted PUSH and may be reused, as JobStore::reserve_id does).
local function id_is_free(job_dir, job_hash, id, queue)
  if redis.call('EXISTS', job_hash) == 1 then return false end
  local owner = redis.call('HGET', job_dir, id)
  return not owner or owner == queue
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
local function progress_on_complete(jk)
  if redis.call('HEXISTS', jk, 'progress') == 1 then redis.call('HSET', jk, 'progress', '1') end
end
local function progress_on_retry(jk)
  redis.call('HDEL', jk, 'progress', 'progress_data', 'progress_updated_at', 'progress_event_at')
end
