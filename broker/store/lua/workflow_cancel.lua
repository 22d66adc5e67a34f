-- DELETE /ojs/v1/workflows/{id}: running -> cancelled; every job of it
-- that has not ended is cancelled (as cancel.lua does), waiting steps never start,
-- callbacks not yet enqueued never will be.
-- KEYS (15): 1 workflow hash, 2 job prefix, 3 ready prefix, 4 delayed, 5 active, 6 stats,
--            7 events, 8 ledger, 9 tenant ledger, 10 workflow dispatch set, 11 class heads,
--            12 finished prefix (keys.hpp finished_prefix), 13 on-hold set (keys.hpp on_hold),
--            14-15 the usage journal and hash (_lib_accounting.lua usage_keys)
-- ARGV: workflow id
-- Reply: {'ok', workflow fields} | {'not_found'} | {'conflict', state}
local wk = KEYS[1]
local wf = read_job(wk)
if not wf then return {'not_found'} end
if wf.state ~= 'running' then return {'conflict', wf.state} end
local now = now_ms()
redis.call('HSET', wk, 'state', 'cancelled', 'cancelled_at', now, 'completed_at', now)
redis.call('ZREM', KEYS[10], ARGV[1])
local c = {ready_prefix = KEYS[3], heads = KEYS[11], delayed = KEYS[4], active = KEYS[5], stats = KEYS[6], events = KEYS[7],
           ledger = KEYS[8], tenant_ledger = KEYS[9], finished_prefix = KEYS[12], on_hold = KEYS[13],
           usage = usage_keys(KEYS, 14)}
for i = 0, tonumber(wf.total) - 1 do
  local id = wf['m:' .. i]
  local jk = id and (KEYS[2] .. id)
  local job = jk and read_job(jk)
  if job and not is_terminal(job.state) then
    cancel_job(c, jk, job, now)
    redis.call('HSET', wk, 'o:' .. i, 'cancelled')
  end
end
emit(KEYS[7], 'workflow.cancelled', {id = '', type = '', queue = wf.queue, attempt = '0'}, {'workflow_id', ARGV[1]})
return {'ok', redis.call('HGETALL', wk)}
