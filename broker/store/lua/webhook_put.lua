-- Stores a webhook subscription: a new one within the cap on subscriptions, or a
-- new version of one that still exists (an update never brings back a deleted one).
-- KEYS (1): 1 subscriptions hash (keys.hpp webhooks, global slot: id -> JSON)
-- ARGV: 1 op ('create' | 'replace'), 2 id, 3 subscription JSON, 4 most subscriptions (0 = no cap)
-- Reply: 1 stored, 0 gone (replace of an id that is not there), -1 the cap is reached (create)
local exists = redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1
if ARGV[1] == 'replace' then
  if not exists then return 0 end
else
  local cap = tonumber(ARGV[4])
  if not exists and cap > 0 and redis.call('HLEN', KEYS[1]) >= cap then return -1 end
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
return 1
