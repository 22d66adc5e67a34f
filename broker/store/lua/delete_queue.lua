-- Admin DELETE of an empty queue (issue 12): refuses while any job waits, runs,
-- is scheduled or sits in the dead letter; else deletes the queue's keys.
-- KEYS: the queue's ready sets (ARGV[1] of them), then active, delayed, dead,
--       then every key to delete (classes, classes:ver, paused, stats, events,
--       seq, config, ledger, tenant-quotas, tenant-ledger, diag:<class>...)
-- Reply: {'ok'} or {'not_empty', jobs}
local ready = tonumber(ARGV[1])
local jobs = 0
for i = 1, ready + 3 do jobs = jobs + redis.call('ZCARD', KEYS[i]) end
if jobs > 0 then return {'not_empty', jobs} end
for i = ready + 4, #KEYS do redis.call('DEL', KEYS[i]) end
return {'ok'}
