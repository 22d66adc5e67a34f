-- Job TTL (options.expires_at, OJS level 2): a waiting job whose expires_at has
-- passed is discarded, never delivered. Checked on the head of a ready set right
-- before FETCH may take it (sorted after _lib.lua: uses its helpers).
local function drop_expired_heads(prefix, class, now)
  local rk = ready_key(prefix, class)
  for _ = 1, 32 do
    local head = redis.call('ZRANGE', rk, 0, 0)
    if not head[1] then return end
    local jk = job_key(prefix, head[1])
    local expires = tonumber(redis.call('HGET', jk, 'expires_at') or '')
    if not expires or expires > now then return end
    redis.call('ZREM', rk, head[1])
    redis.call('HSET', jk, 'state', 'discarded', 'discarded_at', now)
    redis.call('HINCRBY', prefix .. 'stats', 'discarded', 1)
    emit(prefix, 'job.discarded', head[1], {'reason', 'expired'})
  end
end
