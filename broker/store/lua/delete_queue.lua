-- Admin DELETE of an empty queue (issue 12): refuses while any job waits, runs,
-- is scheduled or sits in the dead letter; else deletes the queue's keys.
-- KEYS (n + 4 + m): the queue's n ready sets, then active, delayed, dead, the config
--       hash, then the m keys to delete (classes, classes:ver, paused, stats, events,
--       ledger, tenant-quotas, tenant-ledger, diag:<class>...)
-- ARGV: n (the number of ready sets)
-- Reply: {'ok'} or {'not_empty', jobs}
local ready = tonumber(ARGV[1])
local jobs = 0
for i = 1, ready + 3 do jobs = jobs + redis.call('ZCARD', KEYS[i]) end
if jobs > 0 then return {'not_empty', jobs} end
-- The configuration goes, its version stays (bumped): a broker's cached copy of the
-- old queue's config never matches a new one of the same name (push.lua's check).
local config = KEYS[ready + 4]
local version = redis.call('HINCRBY', config, 'version', 1)
redis.call('DEL', config)
redis.call('HSET', config, 'version', version)
for i = ready + 5, #KEYS do redis.call('DEL', KEYS[i]) end
return {'ok'}
