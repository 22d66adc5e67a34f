-- FETCH: atomically claim up to `count` jobs of the eligible requirement classes.
-- KEYS[1] classes version, KEYS[2] paused flag, KEYS[3] queue config hash,
-- KEYS[4] active zset, KEYS[5] rate window zset (starts of the last rate period)
-- ARGV: prefix, worker_id, request_visibility_ms ('' = none), default_visibility_ms,
--       count, classes_version, then per eligible class 5 values: class id, bonus (soft
--       score), hold cutoff (skip a head enqueued after this ms; 0 = none), gpus the
--       class needs (charged to the queue budget), assigned devices JSON ('' = none)
-- Reply: {'ok', {job snapshots...}, {budget-blocked: class, in_use, limit, kind, ...},
--        rate limit that cut this claim short ('' = none: concurrency | rate)}
local prefix, worker, request_vis, default_vis, count, version =
  ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
if redis.call('EXISTS', KEYS[2]) == 1 then return {'paused'} end
local current = redis.call('GET', KEYS[1]) or '0'
if current ~= version then return {'stale', current} end
local now = now_ms()
promote_due(prefix, now, 1000)

-- [spec #17] Queue rate limit (ojs-rate-limiting.md §7.2): concurrency counts the
-- queue's active jobs (no counter to drift); the rate is a sliding window log of
-- claim times. Jobs over the limit stay available.
local rate_limited = ''
local rl = redis.call('HMGET', KEYS[3], 'rate_concurrency', 'rate_limit_starts', 'rate_period_ms')
local rate_concurrency, rate_starts, rate_period = tonumber(rl[1] or ''), tonumber(rl[2] or ''), tonumber(rl[3] or '')
if rate_concurrency then
  local room = rate_concurrency - redis.call('ZCARD', KEYS[4])
  if room < count then count = math.max(room, 0); rate_limited = 'concurrency' end
end
if rate_starts and rate_period then
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - rate_period)
  local room = rate_starts - redis.call('ZCARD', KEYS[5])
  if room < count then count = math.max(room, 0); rate_limited = 'rate' end
end

local BAND = 1099511627776 -- 2^40: rank = band * 2^40 + seq; band = class rank and priority

-- [harden, issue 12] OJS core: a job past its expires_at when it would be fetched is
-- discarded, never delivered. Heads of the eligible classes are checked (bounded).
local function discard_expired_heads(class)
  for _ = 1, 100 do
    local head = redis.call('ZRANGE', ready_key(prefix, class), 0, 0)
    if not head[1] then return end
    local jk = job_key(prefix, head[1])
    local expires = tonumber(redis.call('HGET', jk, 'expires_at') or '')
    if not expires or expires > now then return end
    redis.call('ZREM', ready_key(prefix, class), head[1])
    redis.call('HSET', jk, 'state', 'discarded', 'discarded_at', now, 'error',  -- no completed_at: it never ran (level-2 ttl case)
      cjson.encode({code = 'expired', type = 'expired', retryable = false,
                    message = 'job expired (expires_at passed) before it was delivered'}))
    redis.call('HINCRBY', prefix .. 'stats', 'discarded', 1)
    emit(prefix, 'job.discarded', head[1], {'reason', 'expired'})
  end
end

local claimed, blocked = {}, {}
for _ = 1, count do
  for i = 7, #ARGV, 5 do discard_expired_heads(ARGV[i]) end -- [harden]
  local best_id, best_class, best_key, best_gpus, best_devices = nil, nil, nil, 0, ''
  for i = 7, #ARGV, 5 do
    local class, bonus, hold, gpus, devices = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4]
    local head = redis.call('ZRANGE', ready_key(prefix, class), 0, 0, 'WITHSCORES')
    local over = nil
    if head[1] then over = budget_block(prefix, gpus) end
    if head[1] and not over then head, over = within_tenant_quota(prefix, class, head, gpus) end
    if over then
      -- Over budget: the job stays available (never rejected) and the reason is reported.
      table.insert(blocked, class); table.insert(blocked, over[1]); table.insert(blocked, over[2]); table.insert(blocked, over[3])
    elseif head[1] then
      local id, score = head[1], tonumber(head[2])
      local held = false
      if hold > 0 then
        local enq = tonumber(redis.call('HGET', job_key(prefix, id), 'enqueued_at') or '0')
        held = enq > hold -- enqueued too recently: keep it for a warm worker a little longer
      end
      if not held then
        local band = math.floor(score / BAND)
        local key = {band, -bonus, score}
        if best_key == nil or key[1] < best_key[1] or (key[1] == best_key[1] and (key[2] < best_key[2] or (key[2] == best_key[2] and key[3] < best_key[3]))) then
          best_id, best_class, best_key, best_gpus, best_devices = id, class, key, gpus, devices
        end
      end
    end
  end
  if not best_id then break end
  redis.call('ZREM', ready_key(prefix, best_class), best_id)
  local jk = job_key(prefix, best_id)
  -- Visibility timeout: the fetch request's, then the job's, then the broker default.
  local vis = request_vis or tonumber(redis.call('HGET', jk, 'visibility_timeout_ms') or '') or default_vis
  redis.call('HINCRBY', jk, 'attempt', 1)
  -- The execution timeout (timeout_ms / ext_ml_timeout_seconds) caps the
  -- reservation: heartbeats extend visibility but never past it.
  local deadline = now + vis
  local timeout = tonumber(redis.call('HGET', jk, 'timeout_ms') or '')
  if timeout and timeout > 0 then
    redis.call('HSET', jk, 'execution_deadline', now + timeout)
    if now + timeout < deadline then deadline = now + timeout end
  else
    redis.call('HDEL', jk, 'execution_deadline')
  end
  redis.call('HSET', jk, 'state', 'active', 'started_at', now, 'worker_id', worker, 'visibility_deadline', deadline)
  if best_gpus > 0 then
    redis.call('HSET', jk, 'charged_gpus', best_gpus)
    budget_charge(prefix, best_gpus)
    charge_tenant(prefix, jk, best_gpus)
  end
  if best_devices ~= '' then
    redis.call('HSET', jk, 'ext_ml_assigned_devices', best_devices)
  else
    redis.call('HDEL', jk, 'ext_ml_assigned_devices')
  end
  redis.call('ZADD', prefix .. 'active', deadline, best_id)
  emit(prefix, 'job.started', best_id, {'worker_id', worker})
  table.insert(claimed, job_snapshot(prefix, best_id))
  if rate_starts and rate_period then  -- [spec #17] one start in the rate window
    redis.call('ZADD', KEYS[5], now, best_id .. ':' .. redis.call('HGET', jk, 'attempt'))
    redis.call('PEXPIRE', KEYS[5], rate_period)
  end
end
return {'ok', claimed, blocked, rate_limited}
