-- Creates a workflow and stores the jobs that start it (a chain's first
-- step, every job of a group or batch), all or nothing. The ids of all its jobs and
-- callbacks are in the directories already (JobDirectory::reserve_id).
-- KEYS (9 + 2n): 1 workflow hash, 2 delayed, 3 seq, 4 events, 5 classes, 6 classes version,
--   7 escalations, 8 reservation waits, 9 class heads, then per starting job j: job hash,
--   ready set of its class
-- ARGV: 1 n (starting jobs), then n payload JSONs (see _lib_workflows.lua), then the
--       workflow hash's field/value pairs
-- Reply: {'ok', workflow fields} | {'duplicate', id}
local n = tonumber(ARGV[1])
local wk = KEYS[1]
if redis.call('EXISTS', wk) == 1 then return {'duplicate', wk} end
for j = 1, n do
  if redis.call('EXISTS', KEYS[9 + 2 * j - 1]) == 1 then return {'duplicate', KEYS[9 + 2 * j - 1]} end
end
local now = now_ms()
-- In slices: unpack has a bound (a workflow of 1000 steps has thousands of fields).
redis.call('HSET', wk, 'created_at', now)
hset_slices(wk, ARGV, 2 + n, #ARGV)
for j = 1, n do
  local k = {job = KEYS[9 + 2 * j - 1], ready = KEYS[9 + 2 * j], delayed = KEYS[2], seq = KEYS[3], events = KEYS[4],
             classes = KEYS[5], classes_ver = KEYS[6], escalations = KEYS[7], reservation_waits = KEYS[8], heads = KEYS[9]}
  store_prepared_job(k, cjson.decode(ARGV[1 + j]), {}, now)
end
return {'ok', redis.call('HGETALL', wk)}
