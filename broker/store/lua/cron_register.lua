-- Cron registration (upsert) and removal.
-- KEYS[1] cron registry hash (name -> definition JSON), KEYS[2] the cron's state hash
-- ARGV: 1 op ('put' | 'delete'), 2 name, 3 definition JSON (put), 4 next_run_at ms ('' = none: disabled)
-- Reply: put -> state as a flat array; delete -> 1 when it existed, else 0
if ARGV[1] == 'delete' then
  local existed = redis.call('HDEL', KEYS[1], ARGV[2])
  redis.call('DEL', KEYS[2])
  return existed
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
if ARGV[4] == '' then redis.call('HDEL', KEYS[2], 'next_run_at')
else redis.call('HSET', KEYS[2], 'next_run_at', ARGV[4]) end
redis.call('HSETNX', KEYS[2], 'run_count', 0)
return redis.call('HGETALL', KEYS[2])
