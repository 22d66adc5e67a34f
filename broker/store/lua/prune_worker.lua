-- Forgets a worker gone longer than the retention window. The caller
-- reclaimed its jobs and checked that it holds none (its held sets live in the
-- queues' slots: WorkerRegistry::forget reads them first); a worker that made
-- contact since the caller looked is kept.
-- KEYS (4): 1 worker index (zset id -> last contact ms), 2 the worker's hash,
--           3 the worker's queue set (keys.hpp worker_queues), 4 its drained devices
--           (keys.hpp worker_drained)  (global keys, one worker)
-- ARGV: worker id, cutoff (ms): forget only if last contact <= cutoff
-- Reply: 1 when forgotten, 0 when kept
local seen = redis.call('ZSCORE', KEYS[1], ARGV[1])
if seen and tonumber(seen) > tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
return 1
