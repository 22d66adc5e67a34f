-- PUSH of a job with a unique policy (spec/ojs-unique-jobs.md), the holder's part,
-- in the holder's queue slot: the conflict policy against the job holding the
-- uniqueness key. UniqueStore::push runs it to decide ('check': nothing is
-- written), takes the key (unique_claim.lua, global slot), runs it again to cancel
-- a replaced holder ('apply') and pushes the new job (push.lua, its queue's slot).
-- KEYS (8): 1 holder's job hash, 2 its class's ready set, 3 its delayed,
--   4 its events, 5 its stats, 6 its class heads, 7 its finished prefix (keys.hpp
--   finished_prefix), 8 its on-hold set (keys.hpp on_hold: a held holder leaves it,
--   as cancel_job's do)  (the holder's queue)
-- ARGV: 1 new job id, 2 holder class the caller read, 3 states (comma-separated),
--       4 period ms ('' = none), 5 on_conflict (reject|ignore|replace|replace_except_schedule),
--       6 'check' (decide only) | 'apply' (cancel a replaced holder: the caller holds the key)
-- Reply: {'free'} (the holder does not block) | {'missing'} (no such job: a PUSH
--        between its steps, or a leftover of a crash) | {'ignored', holder job}
--        | {'conflict', holder_id, holder_state} (reject, or replace of an active job)
--        | {'replaced', scheduled_at to keep ('' = the new job's)} | {'retry'} (re-ranked
--        since the caller read it)
local id, seen_class = ARGV[1], ARGV[2]
local now = now_ms()
local scheduled_at = ''
local h = redis.call('HMGET', KEYS[1], 'state', 'created_at', 'id', 'class', 'scheduled_at', 'type', 'queue', 'attempt', 'tenant')
if not h[1] then return {'missing'} end
local state, created_at, holder_id = h[1], tonumber(h[2] or '0'), h[3]
local states = {}
for s in string.gmatch(ARGV[3], '[^,]+') do states[s] = true end
local within = ARGV[4] == '' or now < created_at + tonumber(ARGV[4])
if not (states[state] and within) then return {'free'} end
local policy = ARGV[5]
if policy == 'ignore' then return {'ignored', redis.call('HGETALL', KEYS[1])} end
if policy == 'reject' or state == 'active' then return {'conflict', holder_id, state} end
if h[4] ~= seen_class then return {'retry'} end  -- re-ranked since the caller read it
-- replace / replace_except_schedule: the holder is cancelled (not active: it
-- may be waiting, scheduled or retrying; an active job is never replaced).
if policy == 'replace_except_schedule' and state == 'scheduled' and h[5] then scheduled_at = h[5] end
if ARGV[6] == 'check' then return {'replaced', scheduled_at} end
if not is_terminal(state) then  -- a terminal holder (states listed it) is left as it is
  ready_remove(KEYS[6], KEYS[2], h[4], holder_id)
  redis.call('ZREM', KEYS[3], holder_id)
  redis.call('ZREM', KEYS[8], holder_id)
  redis.call('HSET', KEYS[1], 'state', 'cancelled', 'cancelled_at', now, 'replaced_by', id)
  redis.call('HDEL', KEYS[1], 'next_attempt_at')
  redis.call('HINCRBY', KEYS[5], 'cancelled', 1)
  job_finished(KEYS[7], {id = holder_id}, 'cancelled', now)
  emit(KEYS[4], 'job.cancelled', {id = holder_id, type = h[6], queue = h[7], attempt = h[8], tenant = h[9] or nil},
       {'reason', 'replaced', 'replaced_by', id})
end
return {'replaced', scheduled_at}
