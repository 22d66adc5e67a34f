-- Batch PUSH, the jobs of one queue: stores every one of them, or none, each with
-- its scheduling indexes (JobStore::push_batch reserves the ids in the directory
-- first and calls this once per queue).
-- KEYS (10n + 3): 10 keys per job j (base = 10*(j-1)):
--   base+1 job hash, base+2 ready set of the job's class, base+3 delayed zset,
--   base+4 seq counter, base+5 events stream, base+6 classes hash, base+7 classes version,
--   base+8 class heads, base+9 escalations, base+10 reservation waits;
--   then 10n+1 the queue's ready prefix (+ class id: its depth), 10n+2 its config hash,
--   10n+3 its on-hold set (held jobs count in the depth)
-- ARGV: 1 number of jobs; then per job: id, queue, class, class_json, rank_base,
--       scheduled_at_ms ('' = now), escalate_after_ms ('' = none), reservation_timeout_ms
--       ('' = none), n (field/value pair count), then n pairs
-- Reply: {'ok', {snapshot, ...}} in request order, or {'duplicate', id} (nothing written),
--        or {'queue_full', 'depth bound strategy'} (nothing written but a backpressure.rejected event)
local n = tonumber(ARGV[1])
local jobs, a = {}, 2
for j = 1, n do
  local job = {base = 10 * (j - 1), id = ARGV[a], queue = ARGV[a + 1], class = ARGV[a + 2],
               class_json = ARGV[a + 3], rank_base = ARGV[a + 4], scheduled_at = ARGV[a + 5],
               escalate_after = ARGV[a + 6], reservation_timeout = ARGV[a + 7], fields = {}}
  local pairs_n = tonumber(ARGV[a + 8])
  for i = a + 9, a + 8 + 2 * pairs_n do table.insert(job.fields, ARGV[i]) end
  a = a + 9 + 2 * pairs_n
  jobs[j] = job
end

-- Check everything before writing anything.
for _, job in ipairs(jobs) do
  if not id_is_free(KEYS[job.base + 1]) then return {'duplicate', job.id} end
end
-- ojs-backpressure.md §9.3: the whole batch fits under the bound, or none of it is stored.
local depth, bound, strategy = over_depth_bound(KEYS[10 * n + 2], KEYS[8], KEYS[10 * n + 1], KEYS[3], KEYS[10 * n + 3], KEYS[5], jobs[1], n)
if depth then return {'queue_full', depth .. ' ' .. bound .. ' ' .. strategy} end

local now = now_ms()
local snapshots = {}
for j, job in ipairs(jobs) do
  local k = new_job_keys(KEYS, job.base + 1)
  k.escalations, k.reservation_waits = KEYS[job.base + 9], KEYS[job.base + 10]
  snapshots[j] = store_new_job(k, job, now)
end
return {'ok', snapshots}
