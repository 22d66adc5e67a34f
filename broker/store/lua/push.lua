-- PUSH: store a new job and make it available (or scheduled), with its
-- scheduling indexes, in one step: an accepted job is always complete.
-- KEYS (9): 1 job hash, 2 classes hash, 3 classes version, 4 ready set of the job's class,
--           5 delayed, 6 seq, 7 events, 8 escalations, 9 reservation waits
-- ARGV: id, class, class_json, rank_base, scheduled_at_ms ('' = now),
--       escalate_after_ms ('' = none), reservation_timeout_ms ('' = none), then field/value pairs
-- Reply: {'ok', job fields} | {'duplicate'}
local id, class, class_json, rank_base, scheduled_at, escalate_after, reservation_timeout =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local jk = KEYS[1]
if redis.call('EXISTS', jk) == 1 then return {'duplicate'} end
local now = now_ms()
if redis.call('HSETNX', KEYS[2], class, class_json) == 1 then redis.call('INCR', KEYS[3]) end
local job = {id = id, class = class, rank_base = rank_base, attempt = 0, created_at = now}
local fields = {'id', id, 'class', class, 'rank_base', rank_base, 'attempt', 0, 'created_at', now}
for i = 8, #ARGV, 2 do
  job[ARGV[i]] = ARGV[i + 1]
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
end
if scheduled_at ~= '' and tonumber(scheduled_at) > now then
  job.state, job.scheduled_at = 'scheduled', scheduled_at
  fields[#fields + 1] = 'state'; fields[#fields + 1] = 'scheduled'
  fields[#fields + 1] = 'scheduled_at'; fields[#fields + 1] = scheduled_at
  redis.call('HSET', jk, unpack(fields))
  redis.call('ZADD', KEYS[5], scheduled_at, id)
else
  local seq = redis.call('INCR', KEYS[6])
  job.state, job.enqueued_at = 'available', now
  fields[#fields + 1] = 'state'; fields[#fields + 1] = 'available'
  fields[#fields + 1] = 'enqueued_at'; fields[#fields + 1] = now
  redis.call('HSET', jk, unpack(fields))
  redis.call('ZADD', KEYS[4], tonumber(job.order_base or rank_base) + seq, id)  -- [fairshare] policy base
end
if escalate_after ~= '' then redis.call('ZADD', KEYS[8], now + tonumber(escalate_after), id) end
if reservation_timeout ~= '' then redis.call('ZADD', KEYS[9], now + tonumber(reservation_timeout), id) end
emit(KEYS[7], 'job.enqueued', job, {'state', job.state})
return {'ok', flat_job(job)}
