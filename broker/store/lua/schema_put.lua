-- Registers a schema version of a job type, once: a version is never replaced, and
-- a type keeps at most a bounded number of versions.
-- KEYS (1): 1 the type's versions hash (keys.hpp schemas, global slot: version -> JSON)
-- ARGV: 1 version, 2 registered schema JSON, 3 most versions of the type
-- Reply: 1 stored, 0 the version exists, -1 the type has the most versions already
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
