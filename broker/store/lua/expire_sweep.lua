-- The maintenance pass's expiry sweep: jobs past their expires_at that
-- still wait (available, scheduled, retryable) are discarded as the claim discards
-- them (discard_expired), and end their workflow step as any discard does. The
-- index lists the jobs PUSH stored with an expires_at (JobStore::push, push_batch:
-- written ahead of the job, so an entry whose job is missing, running or finished,
-- or whose expires_at differs, is dropped here).
-- KEYS (15): 1 expiring index (keys.hpp expiring: zset id -> expires_at ms), 2 stats,
--   3 events, 4-14 workflow keys (_lib_workflows.lua: job prefix, ready prefix,
--   delayed and class heads among them), 15 finished prefix (keys.hpp finished_prefix)
-- ARGV: limit (entries handled per call)
-- Reply: {entries handled, jobs discarded}
local now = now_ms()
local wk = workflow_keys(KEYS, 4, KEYS[3])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int_s(now), 'LIMIT', '0', ARGV[1])
local discarded = 0
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  local jk = wk.job_prefix .. id
  local job = read_job(jk)
  local expires = job and tonumber(job.expires_at or '')
  -- A forming gang that holds members is left to the gang claim, which releases the
  -- GPUs it charged before discarding it (claim_gang.lua expired()).
  local waiting = job and not job.gang_workers and
                  (job.state == 'available' or job.state == 'scheduled' or job.state == 'retryable')
  if waiting and expires and expires > now then
    redis.call('ZADD', KEYS[1], expires, id)  -- listed early (a duplicate PUSH of its id): back at its own time
  elseif waiting and expires then
    if job.state == 'available' then
      ready_remove(wk.heads, wk.ready_prefix .. (job.class or ''), job.class or '', id)
    else
      redis.call('ZREM', wk.delayed, id)
    end
    redis.call('ZREM', wk.escalations, id)
    redis.call('ZREM', wk.reservation_waits, id)
    discard_expired(jk, job, KEYS[2], KEYS[3], KEYS[15], now)
    workflow_job_ended(wk, job, 'failed', now)  -- as any discard
    discarded = discarded + 1
  end
end
return {#due, discarded}
