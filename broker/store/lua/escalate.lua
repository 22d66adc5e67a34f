-- Priority escalation: a job that waited escalation_after_s moves to its target
-- priority class. rank_base (band = class and OJS priority) is rewritten; a job
-- in its ready set is re-scored keeping its FIFO sequence, so it now sorts
-- among the target class. Terminal or already-high jobs only leave the index.
-- ARGV: prefix, id, target class rank (0 spot, 1 on-demand, 2 reserved)
-- Reply: {'ok', from_rank} | {'skipped'}
local prefix, id, target = ARGV[1], ARGV[2], tonumber(ARGV[3])
local BAND = 1099511627776
local jk = job_key(prefix, id)
redis.call('ZREM', prefix .. 'escalations', id)
local f = redis.call('HMGET', jk, 'state', 'rank_base', 'priority', 'class')
if not f[1] or is_terminal(f[1]) then return {'skipped'} end
local old = tonumber(f[2])
local from = 2 - math.floor(math.floor(old / BAND) / 201)
if from >= target then return {'skipped'} end
local base = ((2 - target) * 201 + (100 - tonumber(f[3] or '0'))) * BAND
redis.call('HSET', jk, 'rank_base', string.format('%.0f', base), 'escalated_at', now_ms(), 'escalated_from', from)
if f[1] == 'available' then
  local score = redis.call('ZSCORE', ready_key(prefix, f[4]), id)
  if score then
    redis.call('ZADD', ready_key(prefix, f[4]), string.format('%.0f', base + (tonumber(score) - old)), id)
  end
end
emit(prefix, 'job.escalated', id, {'from_rank', tostring(from), 'to_rank', tostring(target)})
return {'ok', from}
