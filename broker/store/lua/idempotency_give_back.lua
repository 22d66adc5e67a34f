-- Gives an Idempotency-Key back after its PUSH was refused (nothing was
-- stored), only while it still holds what this PUSH wrote: a retry that took it over
-- meanwhile keeps it.
-- KEYS (1): 1 the key's record (keys.hpp idempotency, global slot)
-- ARGV: the record this PUSH wrote
-- Reply: 1 given back, 0 not ours (left as it is)
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
