-- Leader lease (preemption controller): take the lease when free, renew it when ours.
-- KEYS (1): 1 lease (global slot)
-- ARGV: owner id, ttl_ms
-- Reply: 1 = we lead, 0 = another broker does
local current = redis.call('GET', KEYS[1])
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if current then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
