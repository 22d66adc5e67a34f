-- The lifecycle directive an admin gives a known worker (running,
-- quiet, terminate, drain). A new directive has reached no incarnation yet.
-- KEYS (2): 1 worker index (zset id -> last contact ms), 2 the worker's hash  (global keys, one worker)
-- ARGV: worker id, state
-- Reply: 1 when set, 0 when the worker is unknown (never in contact, or forgotten): nothing is written
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[2], 'state', ARGV[2])
redis.call('HDEL', KEYS[2], 'terminated_by')
return 1
