-- Unique jobs: takes the uniqueness key for a new job if it still holds what the
-- caller read (compare-and-set), in the global slot (UniqueStore::push).
-- KEYS (1): 1 uniqueness key (string "queue id" of the job holding it)
-- ARGV: 1 the value the caller read ('' = none), 2 the new job as "queue id",
--       3 period ms ('' = none: no expiry)
-- Reply: {'ok'} | {'retry'} (the holder changed since the caller read it)
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return {'retry'} end
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return {'ok'}
