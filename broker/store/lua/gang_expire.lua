-- Maintenance: forming gangs past their hold deadline release every member
-- and go back to the end of their class (claim_gang does the same lazily).
-- KEYS (8): 1 gangs, 2 seq, 3 events, 4 ledger, 5 tenant ledger, 6 job prefix, 7 ready prefix, 8 class heads
-- ARGV: (none)
-- Reply: the number of gangs released
local g = {gangs = KEYS[1], seq = KEYS[2], events = KEYS[3], ledger = KEYS[4], tenant_ledger = KEYS[5],
           job_prefix = KEYS[6], ready_prefix = KEYS[7], heads = KEYS[8]}
return gang_release_expired(g, now_ms())
