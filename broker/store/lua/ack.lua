-- ACK: active -> completed.
-- KEYS (8 + 11n): 1 job hash, 2 active, 3 events, 4 ledger, 5 tenant ledger,
--            6 held prefix (keys.hpp held_prefix), 7-8 the usage journal and hash
--            (_lib_accounting.lua usage_keys), n = 0 or 1: 9-19 workflow keys (_lib_workflows.lua).
--            The workflow keys are sent only for a job of a workflow (a key costs
--            the call ~1.1k instructions): a workflow's job ACKed without them answers
--            {'need_keys'} with nothing written, and JobStore::ack sends them.
-- ARGV: result_json ('' = none), worker_id ('' = any: plain OJS ACKs carry none)
-- Reply: {'ok'} (also for a replay: the completing worker's same ACK again)
--        | {'not_found'} | {'conflict', state} | {'need_keys'} (nothing written)
-- What need not change with the transition is settled later (settle.lua: the queue's
-- completed count and its minute, the finished index, the type's run time) from a
-- completion line journaled here with the attempt's usage line, in one RPUSH: written
-- in the same step, so nothing is lost, and settled once.
-- The job is not in the reply: JobStore::ack reads it back with an HGETALL
-- sent behind the call, native: returned through Lua it cost Redis ~48k instructions,
-- the native read ~27k (bench/lua-callgrind.sh counts both).
local result, worker = ARGV[1], ARGV[2]
local jk = KEYS[1]
-- Only the fields this script and its helpers read (usage_ended, release_budget,
-- held_by, emit, workflow_job_ended), into a table constructor: ~27k
-- instructions less than the whole hash read into a table (bench/lua-callgrind.sh). A
-- field a helper comes to read on this path is added here. An absent field is false.
local f = redis.call('HMGET', jk, 'id', 'state', 'worker_id', 'gang_workers', 'workflow_id', 'workflow_member', 'tenant',
                     'type', 'queue', 'attempt', 'started_at', 'started_us', 'charged_gpus', 'charged_gpu_mem_mb', 'cpus',
                     'mem_mb', 'usage_run', 'usage_gpu_us', 'usage_cpu_us', 'usage_memory_mb_us', 'usage_gpu_memory_mb_us',
                     'progress', 'result', 'borrowed_gpus', 'charged_tpu_chips')
if not f[1] and not f[2] then return {'not_found'} end
local job = {id = f[1], state = f[2], worker_id = f[3], gang_workers = f[4], workflow_id = f[5], workflow_member = f[6],
             tenant = f[7], type = f[8], queue = f[9], attempt = f[10], started_at = f[11], started_us = f[12],
             charged_gpus = f[13], charged_gpu_mem_mb = f[14], cpus = f[15], mem_mb = f[16], usage_run = f[17],
             usage_gpu_us = f[18], usage_cpu_us = f[19], usage_memory_mb_us = f[20], usage_gpu_memory_mb_us = f[21],
             progress = f[22], result = f[23], borrowed_gpus = f[24], charged_tpu_chips = f[25]}
if job.state ~= 'active' then
  -- A retried ACK (its first reply lost: the broker answered 503) by the worker that
  -- completed the job, with the same result, answers as the first did. Nothing is
  -- written: no event, no count. Any other ACK of a finished job is a conflict.
  if job.state == 'completed' and worker ~= '' and job.worker_id == worker and not job.gang_workers
     and (job.result or '') == result then
    return {'ok'}
  end
  return {'conflict', job.state}
end
-- A worker whose reservation expired must not complete the job another worker now holds.
if worker ~= '' and not held_by(job, worker) then return {'conflict', 'active (held by another worker)'} end
if job.workflow_id and #KEYS < 19 then return {'need_keys'} end  -- before any write
-- a gang completes when every rank has acknowledged; it keeps rank 0's result.
if job.gang_workers then
  local g = redis.call('HMGET', jk, 'gang_acked', 'gang_result')  -- what gang_ack reads (the ranks are gang_workers')
  job.gang_acked, job.gang_result = g[1] or nil, g[2] or nil
  local gang_result = gang_ack(jk, job, worker, result)
  if not gang_result then return {'ok'} end
  result = gang_result
end
local now = now_ms()
local now_s = int_s(now)  -- formatted once, not by every redis.call
-- The run's start parsed and its length formatted once, for the usage record,
-- the completion line and the event ('0' without a start).
local started = tonumber(job.started_at or '')
local run_ms = int_s(now - (started or now))
local set = {'state', 'completed', 'completed_at', now_s}
-- The completion line (settle.lua): end, id, run time (none without a start, never below 0), type.
local completion = 'c\t' .. now_s .. '\t' .. job.id .. '\t' .. (started and (now >= started and run_ms or '0') or '') .. '\t' ..
                   (job.type or '')
usage_ended(usage_keys(KEYS, 7), jk, job, now, set, now_s, started, completion)  -- the job's record into `set`, before the charge is released
local charged = release_budget({ledger = KEYS[4], tenant_ledger = KEYS[5]}, jk, job, true)  -- charged_gpus goes in the HDEL below
job.state, job.completed_at = 'completed', now_s
if result ~= '' then
  job.result = result
  set[#set + 1] = 'result'; set[#set + 1] = result
end
if job.progress then  -- ecosystem: progress ends at 1.0
  job.progress = '1'
  set[#set + 1] = 'progress'; set[#set + 1] = '1'
end
redis.call('HSET', jk, unpack(set))
-- The attempt's fields go in one HDEL, named whether the job holds them or not (an
-- active job always holds its visibility_deadline, so the HDEL is sent anyway):
-- no read of them, no list built.
if charged then
  redis.call('HDEL', jk, 'charged_gpus', 'charged_gpu_mem_mb', 'borrowed_gpus', 'charged_tpu_chips', 'error', 'visibility_deadline',
             'execution_deadline', 'next_attempt_at')
else
  redis.call('HDEL', jk, 'error', 'visibility_deadline', 'execution_deadline', 'next_attempt_at')
end
redis.call('ZREM', KEYS[2], job.id)
release_holder(KEYS[6], job)
emit(KEYS[3], 'job.completed', job, nil, 'duration_ms', run_ms)
-- The keys' table (~6k instructions) is built only for a workflow's job.
if job.workflow_id then workflow_job_ended(workflow_keys(KEYS, 9, KEYS[3]), job, 'completed', now) end
return {'ok'}
