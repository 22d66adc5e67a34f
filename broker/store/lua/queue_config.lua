-- Queue configuration write (admin PUT): a compare-and-set on the version, then the
-- governance fields of the config hash and the tenant quota hash are replaced together.
-- KEYS (2): 1 config hash, 2 tenant quotas hash
-- ARGV: expected version ('' = any), updated_at (ms), r, then the r governance fields of
--       the config hash (all removed: governance's field table names them), n, then n
--       field/value pairs to set, then tenant/max GPU pairs of the tenant quota hash
-- Reply: {'ok', new version} or {'conflict', current version}
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= current then return {'conflict', current} end
local r = tonumber(ARGV[3])
local replaced = {}
for i = 4, 3 + r do table.insert(replaced, ARGV[i]) end
if #replaced > 0 then redis.call('HDEL', KEYS[1], unpack(replaced)) end
local n = tonumber(ARGV[4 + r])
hset_slices(KEYS[1], ARGV, 5 + r, 4 + r + 2 * n)
redis.call('DEL', KEYS[2])
hset_slices(KEYS[2], ARGV, 5 + r + 2 * n, #ARGV)  -- up to 3,999 tenants (the schema's maxProperties)
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'updated_at', ARGV[2])
return {'ok', version}
