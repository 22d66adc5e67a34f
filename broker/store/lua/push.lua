-- PUSH: store a new job and make it available (or scheduled).
-- KEYS[1] classes hash, KEYS[2] classes version
-- ARGV: prefix, id, class, class_json, rank_base, scheduled_at_ms ('' = now), then field/value pairs
local prefix, id, class, class_json, rank_base, scheduled_at = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local jk = job_key(prefix, id)
if redis.call('EXISTS', jk) == 1 then return {'duplicate'} end
local now = now_ms()
if redis.call('HSETNX', KEYS[1], class, class_json) == 1 then redis.call('INCR', KEYS[2]) end
local fields = {}
for i = 7, #ARGV do table.insert(fields, ARGV[i]) end
redis.call('HSET', jk, 'id', id, 'class', class, 'rank_base', rank_base, 'attempt', 0, 'created_at', now, unpack(fields))
if scheduled_at ~= '' and tonumber(scheduled_at) > now then
  redis.call('HSET', jk, 'state', 'scheduled', 'scheduled_at', scheduled_at)
  redis.call('ZADD', prefix .. 'delayed', scheduled_at, id)
  emit(prefix, 'job.enqueued', id, {'state', 'scheduled'})
else
  make_available(prefix, id, now)
  emit(prefix, 'job.enqueued', id, {'state', 'available'})
end
return {'ok', job_snapshot(prefix, id)}
