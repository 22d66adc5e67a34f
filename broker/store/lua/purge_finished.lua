-- Purge of a queue's finished jobs (ojs-admin-api.md §6.5): up to `limit` jobs of
-- one terminal state that finished before a time are deleted, with their index entries
-- (the finished index and the dead letter). The caller drops them from the job
-- directory (global slot) after.
-- KEYS (6): 1 finished prefix (keys.hpp finished_prefix), 2 job prefix, 3 dead,
--           4 log prefix (keys.hpp log_prefix: the job's log goes with it),
--           5 classes hash, 6 classes version (the job leaves its class)
-- ARGV: state (completed | discarded | cancelled), before (ms, exclusive), limit
-- Reply: the ids deleted
local state, before, limit = ARGV[1], ARGV[2], ARGV[3]
local index = KEYS[1] .. state
local ids = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. before, 'LIMIT', 0, limit)
for _, id in ipairs(ids) do
  class_leave(KEYS[5], KEYS[6], redis.call('HGET', KEYS[2] .. id, 'class'))
  redis.call('DEL', KEYS[2] .. id, KEYS[4] .. id)
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZREM', index, id)
end
return ids
