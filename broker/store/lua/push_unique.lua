-- PUSH of a job with a unique policy (spec/ojs-unique-jobs.md): the duplicate
-- check, the conflict policy and the insert are one step.
-- KEYS (17): 1 job directory, 2 queue directory,
--   3 new job hash, 4 its class's ready set, 5 delayed, 6 seq,
--   7 events, 8 classes, 9 classes version  (the new job's queue)
--   10 uniqueness key (string "queue id" of the job holding it)
--   11 holder's job hash, 12 its class's ready set, 13 its delayed,
--   14 its events, 15 its stats (when there is no holder: any key, unused)
--   16 escalations, 17 reservation waits (the new job's queue)
-- ARGV: 1 id, 2 queue, 3 class, 4 class_json, 5 rank_base, 6 scheduled_at ('' = now),
--       7 holder value the caller read ('' = none), 8 holder class the caller read,
--       9 states (comma-separated), 10 period ms ('' = none), 11 on_conflict
--       (reject|ignore|replace|replace_except_schedule), 12 escalate_after_ms ('' = none),
--       13 reservation_timeout_ms ('' = none), then field/value pairs
-- Reply: {'ok', job} | {'conflict', holder_id, holder_state} (reject, or replace of an
--        active job) | {'ignored', holder job} | {'retry'} (the holder changed since the
--        caller read it: read again) | {'duplicate'} (the id is taken)
local id, queue, seen, seen_class = ARGV[1], ARGV[2], ARGV[7], ARGV[8]
local holder = redis.call('GET', KEYS[10])
if (holder or '') ~= seen then return {'retry'} end
if not id_is_free(KEYS[1], KEYS[3], id, queue) then return {'duplicate'} end
local now = now_ms()
local scheduled_at = ARGV[6]

if holder then
  local h = redis.call('HMGET', KEYS[11], 'state', 'created_at', 'id', 'class', 'scheduled_at', 'type', 'queue', 'attempt')
  local state, created_at, holder_id = h[1], tonumber(h[2] or '0'), h[3]
  local states = {}
  for s in string.gmatch(ARGV[9], '[^,]+') do states[s] = true end
  local within = ARGV[10] == '' or now < created_at + tonumber(ARGV[10])
  if state and states[state] and within then
    local policy = ARGV[11]
    if policy == 'ignore' then return {'ignored', redis.call('HGETALL', KEYS[11])} end
    if policy == 'reject' or state == 'active' then return {'conflict', holder_id, state} end
    if h[4] ~= seen_class then return {'retry'} end  -- re-ranked since the caller read it
    -- replace / replace_except_schedule: the holder is cancelled (not active: it
    -- may be waiting, scheduled or retrying; an active job is never replaced).
    if policy == 'replace_except_schedule' and state == 'scheduled' and h[5] then scheduled_at = h[5] end
    if is_terminal(state) then
      -- a terminal holder (states listed it) is left as it is
    else
      redis.call('ZREM', KEYS[12], holder_id)
      redis.call('ZREM', KEYS[13], holder_id)
      redis.call('HSET', KEYS[11], 'state', 'cancelled', 'cancelled_at', now, 'replaced_by', id)
      redis.call('HDEL', KEYS[11], 'next_attempt_at')
      redis.call('HINCRBY', KEYS[15], 'cancelled', 1)
      emit(KEYS[14], 'job.cancelled', {id = holder_id, type = h[6], queue = h[7], attempt = h[8]},
           {'reason', 'replaced', 'replaced_by', id})
    end
  end
end

local fields = {}
for i = 14, #ARGV do table.insert(fields, ARGV[i]) end
local k = new_job_keys(KEYS[1], KEYS[2], 3)
k.escalations, k.reservation_waits = KEYS[16], KEYS[17]
local snapshot = store_new_job(k, {id = id, queue = queue, class = ARGV[3], class_json = ARGV[4], rank_base = ARGV[5],
                                   scheduled_at = scheduled_at, fields = fields, escalate_after = ARGV[12],
                                   reservation_timeout = ARGV[13]}, now)
if ARGV[10] ~= '' then
  redis.call('SET', KEYS[10], queue .. ' ' .. id, 'PX', ARGV[10])
else
  redis.call('SET', KEYS[10], queue .. ' ' .. id)
end
return {'ok', snapshot}
