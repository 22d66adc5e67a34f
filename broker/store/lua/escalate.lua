-- Priority escalation: a job that waited escalation_after_s moves to its target
-- priority class. The broker computes the new rank base (priority_score.hpp); a
-- job in its ready set is re-scored keeping its FIFO sequence, so it now sorts
-- among the target class. A job that is terminal or already at or above the
-- target only leaves the index.
-- KEYS (5): 1 job hash, 2 escalations, 3 ready set of the job's class, 4 events, 5 class heads
-- ARGV: id, expected rank_base (the one the decision was made on), new rank_base,
--       from class rank, to class rank, new order_base ('' = keep the order:
--       a policy whose order does not follow the class)
-- Reply: {'ok'} | {'skipped'}
local id, expected, base, from, to, order = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local jk = KEYS[1]
redis.call('ZREM', KEYS[2], id)
local f = redis.call('HMGET', jk, 'state', 'rank_base', 'type', 'queue', 'attempt', 'order_base', 'class', 'tenant')
if not f[1] or is_terminal(f[1]) or f[2] ~= expected then return {'skipped'} end
local set = {'rank_base', base, 'escalated_at', now_ms(), 'escalated_from', from}
-- under a policy with its own order (order_base) the class changes, not the
-- order; except under `fair`, whose order is the class first: the broker
-- gives its new order_base.
local score_base = base
if f[6] then
  score_base = (order or '') ~= '' and order or nil
  if score_base then set[#set + 1] = 'order_base'; set[#set + 1] = order end
end
redis.call('HSET', jk, unpack(set))
if f[1] == 'available' and score_base then
  local score = redis.call('ZSCORE', KEYS[3], id)
  if score then
    local _, seq = score_unpack(tonumber(score))
    redis.call('ZADD', KEYS[3], string.format('%.0f', score_at(tonumber(score_base), seq)), id)
    head_refresh(KEYS[5], KEYS[3], f[7])
  end
end
emit(KEYS[4], 'job.escalated', {id = id, type = f[3], queue = f[4], attempt = f[5], tenant = f[8] or nil}, {'from_rank', from, 'to_rank', to})
return {'ok'}
