-- Batch PUSH: stores every job of a batch, or none (all-or-nothing).
-- KEYS[1]  job directory hash (job id -> queue)
-- KEYS[2]  queue directory hash (queue -> first seen ms)
-- then 7 keys per job j (base = 2 + 7*(j-1)):
--   base+1 job hash, base+2 ready set of the job's class, base+3 delayed zset,
--   base+4 seq counter, base+5 events stream, base+6 classes hash, base+7 classes version
-- ARGV[1]  number of jobs; then per job: id, queue, class, class_json, rank_base,
--          scheduled_at_ms ('' = now), n (field/value pair count), then n pairs
-- Reply: {'ok', {snapshot, ...}} in request order, or {'duplicate', id} (nothing written)
local n = tonumber(ARGV[1])
local jobs, a = {}, 2
for j = 1, n do
  local job = {base = 2 + 7 * (j - 1), id = ARGV[a], queue = ARGV[a + 1], class = ARGV[a + 2],
               class_json = ARGV[a + 3], rank_base = ARGV[a + 4], scheduled_at = ARGV[a + 5], fields = {}}
  local pairs_n = tonumber(ARGV[a + 6])
  for i = a + 7, a + 6 + 2 * pairs_n do table.insert(job.fields, ARGV[i]) end
  a = a + 7 + 2 * pairs_n
  jobs[j] = job
end

-- Check everything before writing anything.
for _, job in ipairs(jobs) do
  if not id_is_free(KEYS[1], KEYS[job.base + 1], job.id, job.queue) then return {'duplicate', job.id} end
end

local now = now_ms()
local snapshots = {}
for j, job in ipairs(jobs) do
  snapshots[j] = store_new_job(new_job_keys(KEYS[1], KEYS[2], job.base + 1), job, now)
end
return {'ok', snapshots}
