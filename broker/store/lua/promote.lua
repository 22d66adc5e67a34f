-- Background promoter: due scheduled jobs and retries become available.
-- KEYS (6): 1 delayed, 2 seq, 3 events, 4 job prefix, 5 ready prefix, 6 class heads
-- ARGV: (none)
-- Reply: the number of due entries handled
return promote_due({delayed = KEYS[1], seq = KEYS[2], events = KEYS[3], job_prefix = KEYS[4], ready_prefix = KEYS[5], heads = KEYS[6]},
                   now_ms(), 1000)
