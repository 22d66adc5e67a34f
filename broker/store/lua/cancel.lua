-- CANCEL: any non-terminal state -> cancelled.
-- KEYS (23): 1 job hash, 2 ready prefix (+ the job's class), 3 delayed, 4 active, 5 stats,
--           6 events, 7 ledger, 8 tenant ledger, 9-19 workflow keys (_lib_workflows.lua; 19 the class heads),
--           20 finished prefix (keys.hpp finished_prefix), 21 the on-hold set (keys.hpp on_hold),
--           22-23 the usage journal and hash (_lib_accounting.lua usage_keys)
-- ARGV: 1 how a running job's process is stopped: cancel (SIGTERM, grace, SIGKILL) | kill (SIGKILL now)
-- Reply: {'ok', job fields} | {'not_found'} | {'conflict', state}
-- A kill of a job already cancelled whose process is still stopping turns that stop into a kill.
local stop = ARGV[1] == 'kill' and 'kill' or 'cancel'
local jk = KEYS[1]
local job = read_job(jk)
if not job then return {'not_found'} end
if stop == 'kill' and job.state == 'cancelled' and job.stop_action then
  job.stop_action = 'kill'
  redis.call('HSET', jk, 'stop_action', 'kill')
  return {'ok', flat_job(job)}
end
if is_terminal(job.state) then return {'conflict', job.state} end
local now = now_ms()
cancel_job({ready_prefix = KEYS[2], heads = KEYS[19], delayed = KEYS[3], active = KEYS[4], stats = KEYS[5], events = KEYS[6],
            ledger = KEYS[7], tenant_ledger = KEYS[8], finished_prefix = KEYS[20], on_hold = KEYS[21],
            usage = usage_keys(KEYS, 22)}, jk, job, now, stop)
workflow_job_ended(workflow_keys(KEYS, 9, KEYS[6]), job, 'cancelled', now)
return {'ok', flat_job(job)}
