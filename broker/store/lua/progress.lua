-- PROGRESS (spec/ojs-progress.md): records an active job's progress, extends its
-- reservation as a heartbeat would, and writes at most one event per second.
-- KEYS (3): 1 job hash, 2 the queue's active zset, 3 the queue's events stream
-- ARGV: 1 id, 2 worker_id ('' = any), 3 progress 0..1 ('' = none), 4 data JSON ('' = none),
--       5 default visibility ms, 6 message as a JSON string ('' = none)
-- Reply: {'ok', progress, visibility_deadline} | {'ignored', reason} (not active, or a
--        lower value than already reported) | {'conflict', reason} (another worker's job)
--        | {'not_found'}
local id, worker, progress, data = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local jk = KEYS[1]
local f = redis.call('HMGET', jk, 'state', 'worker_id', 'progress', 'progress_event_at', 'type', 'queue', 'attempt', 'gang_workers', 'tenant',
                    'progress_base')
if not f[1] then return {'not_found'} end
if f[1] ~= 'active' then return {'ignored', 'state ' .. f[1]} end
if worker ~= '' and not held_by({worker_id = f[2], gang_workers = f[8] or nil}, worker) then return {'conflict', 'active (held by another worker)'} end
if progress ~= '' and f[3] and tonumber(progress) < tonumber(f[3]) then return {'ignored', 'progress may not decrease'} end
local now = now_ms()
if progress ~= '' then
  redis.call('HSET', jk, 'progress', progress)
  -- The attempt's first report above 0: the start estimate's pace is measured from it,
  -- past the setup a job reports no progress in (estimate::progress_end).
  if not f[10] and tonumber(progress) > 0 then redis.call('HSET', jk, 'progress_base', progress, 'progress_base_at', now) end
end
if data ~= '' then redis.call('HSET', jk, 'progress_data', data) end
if ARGV[6] ~= '' then redis.call('HSET', jk, 'progress_message', ARGV[6]) end
redis.call('HSET', jk, 'progress_updated_at', now)
local deadline = extend_visibility(jk, KEYS[2], id, now, tonumber(ARGV[5]))
if now - tonumber(f[4] or '0') >= 1000 then
  redis.call('HSET', jk, 'progress_event_at', now)
  emit(KEYS[3], 'job.progress', {id = id, type = f[5], queue = f[6], attempt = f[7], tenant = f[9] or nil},
       {'progress', redis.call('HGET', jk, 'progress') or ''})
end
return {'ok', redis.call('HGET', jk, 'progress') or '', deadline}
