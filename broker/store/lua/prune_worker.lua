-- [spec #17] Forgets a worker gone longer than the retention window. The caller
-- reclaimed its jobs first; a worker that still holds a claim record, or that
-- made contact since the caller looked, is kept.
-- KEYS[1] worker index (zset id -> last contact ms), KEYS[2] the worker's hash,
-- KEYS[3] the worker's claim records (hash job id -> load)
-- ARGV: worker id, cutoff (ms): forget only if last contact <= cutoff
-- Reply: 1 when forgotten, 0 when kept
local seen = redis.call('ZSCORE', KEYS[1], ARGV[1])
if seen and tonumber(seen) > tonumber(ARGV[2]) then return 0 end
if redis.call('HLEN', KEYS[3]) > 0 then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2], KEYS[3])
return 1
