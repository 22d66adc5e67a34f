-- PUSH: store a new job and make it available (or scheduled), with its
-- scheduling indexes, in one step: an accepted job is always complete.
-- KEYS (13): 1 job hash, 2 classes hash, 3 classes version, 4 ready set of the job's class,
--           5 delayed, 6 seq, 7 events, 8 escalations, 9 reservation waits, 10 class heads,
--           11 queue config hash, 12 ready prefix (+ class id: the queue's depth),
--           13 on-hold set (keys.hpp on_hold: held jobs count in the depth)
-- ARGV: id, class, class_json, rank_base, scheduled_at_ms ('' = now),
--       escalate_after_ms ('' = none), reservation_timeout_ms ('' = none),
--       config version ('' = not checked), then field/value pairs
-- Reply: {'ok', {fields the script wrote beyond ARGV: state, created_at, enqueued_at | scheduled_at}}
--        | {'duplicate'} | {'stale_config', current version} (nothing written)
--        | {'queue_full', 'depth bound strategy'} (nothing written but a backpressure.rejected event)
-- The caller holds every field it sent, so the reply carries only what the
-- script decided (a small reply; the job hash is written in one HSET from ARGV).
local id, class, class_json, rank_base, scheduled_at, escalate_after, reservation_timeout, config_version =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
-- The broker prepared the job with its cached queue config (admission: defaults,
-- limits, policy): it must still be the current one (every config write bumps
-- `version`: queue_config.lua, delete_queue.lua), else the broker reads it again.
-- One read of the config: its version and the depth bound.
local cfg = redis.call('HMGET', KEYS[11], 'version', 'max_depth', 'overflow')
if config_version ~= '' then
  local current = cfg[1] or '0'
  if current ~= config_version then return {'stale_config', tonumber(current)} end
end
local jk = KEYS[1]
if redis.call('EXISTS', jk) == 1 then return {'duplicate'} end
local now = now_ms()
local now_s = int_s(now)
local job = {id = id, attempt = '0'}  -- what emit reads
local order_base = nil
for i = 9, #ARGV, 2 do
  local f = ARGV[i]
  if f == 'type' then job.type = ARGV[i + 1] elseif f == 'queue' then job.queue = ARGV[i + 1]
  elseif f == 'tenant' then job.tenant = ARGV[i + 1]
  elseif f == 'order_base' then order_base = ARGV[i + 1] end  -- the queue policy's band
end
local depth, bound, strategy = over_depth_bound(KEYS[11], KEYS[10], KEYS[12], KEYS[5], KEYS[13], KEYS[7], job, 1, {cfg[2], cfg[3]})
if depth then return {'queue_full', depth .. ' ' .. bound .. ' ' .. strategy} end
class_enter(KEYS[2], KEYS[3], class, class_json)
local state, at_field, at
if scheduled_at ~= '' and tonumber(scheduled_at) > now then
  state, at_field, at = 'scheduled', 'scheduled_at', scheduled_at
  redis.call('ZADD', KEYS[5], scheduled_at, id)
else
  state, at_field, at = 'available', 'enqueued_at', now_s
  ready_add(KEYS[10], KEYS[4], class, score_at(tonumber(order_base or rank_base), redis.call('INCR', KEYS[6])), id)  -- policy base
end
redis.call('HSET', jk, 'id', id, 'class', class, 'rank_base', rank_base, 'attempt', '0', 'created_at', now_s,
           'state', state, at_field, at, unpack(ARGV, 9))
if escalate_after ~= '' then redis.call('ZADD', KEYS[8], int_s(now + tonumber(escalate_after)), id) end
if reservation_timeout ~= '' then redis.call('ZADD', KEYS[9], int_s(now + tonumber(reservation_timeout)), id) end
emit(KEYS[7], 'job.enqueued', job, nil, 'state', state)
return {'ok', {'state', state, 'created_at', now_s, at_field, at}}
