-- Cron registration (upsert) and removal, scoped to a tenant and within the caps.
-- KEYS (5): 1 cron registry hash (name -> definition JSON), 2 the cron's state hash,
--   3 due zset (name -> next_run_at ms), 4 tenants hash (name -> tenant), 5 deferred set
-- ARGV: 1 op ('put' | 'delete'), 2 name, 3 definition JSON (put), 4 next_run_at ms
--       ('' = none: disabled), 5 the cron's tenant (put), 6 the caller's tenant scope
--       ('' = every tenant), 7 most crons in all (0 = no cap), 8 most crons per tenant (0 = no cap)
-- Reply: put -> {'ok', state as a flat array} | {'forbidden'} (another tenant's name)
--        | {'limit', 'max_crons' or 'max_crons_per_tenant', max};
--        delete -> 1 when it existed (in scope), else 0
local name, scope = ARGV[2], ARGV[6]
local exists = redis.call('HEXISTS', KEYS[1], name) == 1
if exists and scope ~= '' and (redis.call('HGET', KEYS[4], name) or '') ~= scope then
  if ARGV[1] == 'delete' then return 0 end
  return {'forbidden'}
end
if ARGV[1] == 'delete' then
  if not exists then return 0 end
  redis.call('HDEL', KEYS[1], name)
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[3], name)
  redis.call('HDEL', KEYS[4], name)
  redis.call('SREM', KEYS[5], name)
  return 1
end
local tenant = ARGV[5]
if not exists then  -- a new cron counts against the caps; replacing one does not
  local max_total, max_tenant = tonumber(ARGV[7]), tonumber(ARGV[8])
  if max_total > 0 and redis.call('HLEN', KEYS[1]) >= max_total then return {'limit', 'max_crons', max_total} end
  if max_tenant > 0 then
    local count = 0
    for _, t in ipairs(redis.call('HVALS', KEYS[4])) do
      if t == tenant then count = count + 1 end
    end
    if count >= max_tenant then return {'limit', 'max_crons_per_tenant', max_tenant} end
  end
end
redis.call('HSET', KEYS[1], name, ARGV[3])
redis.call('HSET', KEYS[4], name, tenant)
if ARGV[4] == '' then
  redis.call('HDEL', KEYS[2], 'next_run_at')
  redis.call('ZREM', KEYS[3], name)
else
  redis.call('HSET', KEYS[2], 'next_run_at', ARGV[4])
  redis.call('ZADD', KEYS[3], ARGV[4], name)
end
redis.call('HSETNX', KEYS[2], 'run_count', 0)
return {'ok', redis.call('HGETALL', KEYS[2])}
