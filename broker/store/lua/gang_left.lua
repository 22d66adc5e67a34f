-- A member told to leave its elastic gang (gang_leave.lua) is gone: its worker
-- released the job (NACK) or its deadline passed (the reclaim of every broker). The
-- gang continues with one member fewer (_lib_gang.lua gang_member_leave). Idempotent:
-- a member no longer leaving (already gone, or the gang ended) changes nothing.
-- KEYS (7): 1 job hash, 2 preempting, 3 events, 4 ledger, 5 tenant ledger,
--   6 the growing elastic gangs (keys.hpp gangs_growing), 7 the queue's usage hash (keys.hpp usage)
-- ARGV: job id, worker_id
-- Reply: {'ok', job fields, size} | {'not_leaving'}
local jk, id, worker = KEYS[1], ARGV[1], ARGV[2]
redis.call('ZREM', KEYS[2], gang_leave_entry(id, worker))
local job = read_job(jk)
if not job or job.state ~= 'active' or not job.gang_workers or not gang_leaving_of(job)[worker]
   or not gang_rank(job, worker) then
  return {'not_leaving'}
end
local size = gang_member_leave({ledger = KEYS[4], tenant_ledger = KEYS[5], growing = KEYS[6], usage = KEYS[7], events = KEYS[3]},
                               jk, job, worker, now_ms())
return {'ok', flat_job(read_job(jk)), size}
