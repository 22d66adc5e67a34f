-- Keeps the first start estimate answered for a waiting job on the job itself, so
-- that once it has run, the estimate store learns how late jobs start against their
-- late start (EstimateStore::completed_runs): start_at_p90's calibration. A job
-- that is gone is not brought back as a stub hash.
-- KEYS (1): 1 job hash (keys.hpp job)
-- ARGV: 1 asked at (ms), 2 the run's late start (ms, before the calibration widens it)
-- Reply: 1 kept, 0 the job is gone or an earlier estimate is kept
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[1], 'estimate_asked_at', ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'estimate_late_at', ARGV[2])
return 1
