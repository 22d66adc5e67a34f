-- Queue configuration write (admin PUT): a compare-and-set on the version, then the
-- governance fields of the config hash and the tenant quota hash are replaced together.
-- KEYS (2): 1 config hash, 2 tenant quotas hash
-- ARGV: expected version ('' = any), updated_at (ms), n, then n field/value pairs of the
--       config hash (budget fields absent from them are removed), then tenant/max GPU pairs
-- Reply: {'ok', new version} or {'conflict', current version}
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= current then return {'conflict', current} end
redis.call('HDEL', KEYS[1], 'max_total_gpus', 'max_concurrent_gpu_jobs', 'ml_defaults', 'ml_limits', 'tenant_quotas',
           'rate_limit', 'rate_concurrency', 'rate_limit_starts', 'rate_period_ms',  -- [spec #17] queue rate limit
           'policy', 'tenant_fairness', 'fair_tenants',  -- [fairshare] queue policy and tenant weights
           'backfill')  -- [backfill]
local n = tonumber(ARGV[3])
hset_slices(KEYS[1], ARGV, 4, 3 + 2 * n)
redis.call('DEL', KEYS[2])
hset_slices(KEYS[2], ARGV, 4 + 2 * n, #ARGV)  -- up to 3,999 tenants (queue_config.cpp)
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'updated_at', ARGV[2])
return {'ok', version}
