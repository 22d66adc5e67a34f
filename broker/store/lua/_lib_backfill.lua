-- [backfill] EASY backfilling on GPUs held for a waiting job's reservation
-- (docs/matching.md#backfill). For each eligible class that would use held GPUs,
-- the broker passes the reservation's start (a 6th field of the class's line in
-- claim.lua's ARGV); a job of such a
-- class is claimed only when it declares ext_ml_estimated_duration_seconds (job
-- field estimated_duration_s) and now + that <= the start.
-- Keys: the caller's declared ready set, and t = {tenant_quotas, tenant_ledger,
-- job_prefix} as for within_tenant_quota.

-- The first of the class's 32 oldest ready jobs declared to end by `before` (and
-- within its tenant's quota) as id, score; else nil, nil and what the head
-- declared (seconds; -1: nothing), for the refusal the broker reports.
local function backfill_pick(t, ready_key, before, now, gpus)
  local range = redis.call('ZRANGE', ready_key, '0', '31', 'WITHSCORES')
  local head_declared = nil
  for i = 1, #range, 2 do
    local f = redis.call('HMGET', t.job_prefix .. range[i], 'estimated_duration_s', 'tenant')
    local est = tonumber(f[1] or '')
    if head_declared == nil then head_declared = est or -1 end
    if est and now + est * 1000 <= before and not (has_tenant_quotas(t) and tenant_block(t, f[2], gpus)) then
      return range[i], range[i + 1], nil
    end
  end
  return nil, nil, head_declared or -1
end
