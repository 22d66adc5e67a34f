-- Background promoter: due scheduled jobs and retries become available; one
-- already past its expires_at is discarded instead (expiry before promotion), and
-- ends its workflow step as any discard does.
-- KEYS (14): 1 stats, 2 events, 3-13 workflow keys (_lib_workflows.lua: job prefix,
--   ready prefix, seq, delayed and class heads among them), 14 finished prefix
--   (keys.hpp finished_prefix)
-- ARGV: (none)
-- Reply: the number of due entries handled
local now = now_ms()
local wk = workflow_keys(KEYS, 3, KEYS[2])
return promote_due({delayed = wk.delayed, seq = wk.seq, events = KEYS[2], job_prefix = wk.job_prefix,
                    ready_prefix = wk.ready_prefix, heads = wk.heads},
                   now, 1000, function(jk, job)
                     discard_expired(jk, job, KEYS[1], KEYS[2], KEYS[14], now)
                     workflow_job_ended(wk, job, 'failed', now)  -- as any discard
                   end)
