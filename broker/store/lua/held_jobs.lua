-- HELD_JOBS: what a worker holds in one queue, read without writing: the ids of its
-- held set (keys.hpp held) and, for each, the job hash's fields named in ARGV. Sent in
-- the worker's contact pipeline (WorkerStore::contact), so that a FETCH learns its
-- load in that one round trip instead of reading the ids first and the jobs after.
-- The caller verifies each job (finished, or moved to another worker: the entry heals).
-- KEYS (2): 1 the worker's held set in the queue, 2 job prefix (+ id)
-- ARGV: the job fields to read
-- Reply: {id, {field values, nil when absent}, id, {...}, ...}
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  out[#out + 1] = id
  out[#out + 1] = redis.call('HMGET', KEYS[2] .. id, unpack(ARGV))
end
return out
