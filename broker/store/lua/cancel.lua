-- CANCEL: any non-terminal state -> cancelled.
-- KEYS (13 + 11n): 1 job hash, 2 ready prefix (+ the job's class), 3 delayed, 4 active, 5 stats,
--           6 events, 7 ledger, 8 tenant ledger, 9 finished prefix (keys.hpp finished_prefix),
--           10 the on-hold set (keys.hpp on_hold), 11-12 the usage journal and hash
--           (_lib_accounting.lua usage_keys), 13 the class heads, n = 0 or 1: 14-24 the
--           workflow keys (_lib_workflows.lua), sent only for a workflow's job: without
--           them such a job answers {'need_keys'}, nothing written.
-- ARGV: 1 how a running job's process is stopped: cancel (SIGTERM, grace, SIGKILL) | kill (SIGKILL now)
-- Reply: {'ok'} | {'not_found'} | {'conflict', state} | {'need_keys'}
-- The job is not in the reply: JobStore::cancel reads it back natively, behind the
-- call in the same round trip (a bulk cancel sends one call a job).
-- A kill of a job already cancelled whose process is still stopping turns that stop into a kill.
local stop = ARGV[1] == 'kill' and 'kill' or 'cancel'
local jk = KEYS[1]
-- What this script and its helpers read (cancel_job: release_budget, ready_remove,
-- job_finished, emit; workflow_job_ended), and for a running job what usage_ended
-- reads of its attempt. A field a helper comes to read on this path is added here.
local job = read_fields(jk, {'id', 'state', 'stop_action', 'class', 'workflow_id', 'workflow_member', 'tenant', 'type', 'queue',
                             'attempt', 'charged_gpus', 'charged_gpu_mem_mb', 'borrowed_gpus', 'charged_tpu_chips'})
if not job then return {'not_found'} end
if stop == 'kill' and job.state == 'cancelled' and job.stop_action then
  redis.call('HSET', jk, 'stop_action', 'kill')
  return {'ok'}
end
if is_terminal(job.state) then return {'conflict', job.state} end
if job.workflow_id and #KEYS < 24 then return {'need_keys'} end  -- before any write
if job.state == 'active' then  -- its attempt ends: the usage it ran up
  local run = read_fields(jk, {'id', 'state', 'worker_id', 'started_at', 'started_us', 'cpus', 'mem_mb', 'usage_run',
                               'usage_gpu_us', 'usage_cpu_us', 'usage_memory_mb_us', 'usage_gpu_memory_mb_us'}) or {}
  for k, v in pairs(run) do job[k] = v end
end
local now = now_ms()
cancel_job({ready_prefix = KEYS[2], heads = KEYS[13], delayed = KEYS[3], active = KEYS[4], stats = KEYS[5], events = KEYS[6],
            ledger = KEYS[7], tenant_ledger = KEYS[8], finished_prefix = KEYS[9], on_hold = KEYS[10],
            usage = usage_keys(KEYS, 11)}, jk, job, now, stop)
if job.workflow_id then workflow_job_ended(workflow_keys(KEYS, 14, KEYS[6]), job, 'cancelled', now) end
return {'ok'}
