-- PUSH of a job with a unique policy (spec/ojs-unique-jobs.md): the duplicate
-- check, the conflict policy and the insert are one step.
-- KEYS[1] job directory, KEYS[2] queue directory,
-- KEYS[3] new job hash, KEYS[4] its class's ready set, KEYS[5] delayed, KEYS[6] seq,
-- KEYS[7] events, KEYS[8] classes, KEYS[9] classes version  (the new job's queue)
-- KEYS[10] uniqueness key (string "queue id" of the job holding it)
-- KEYS[11] holder's job hash, KEYS[12] its class's ready set, KEYS[13] its delayed,
-- KEYS[14] its events, KEYS[15] its stats (when there is no holder: any key, unused)
-- ARGV: 1 id, 2 queue, 3 class, 4 class_json, 5 rank_base, 6 scheduled_at ('' = now),
--       7 holder value the caller read ('' = none), 8 holder class the caller read,
--       9 states (comma-separated), 10 period ms ('' = none), 11 on_conflict
--       (reject|ignore|replace|replace_except_schedule), then field/value pairs
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
  local h = redis.call('HMGET', KEYS[11], 'state', 'created_at', 'id', 'class', 'scheduled_at')
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
      emit_to(KEYS[14], KEYS[11], 'job.cancelled', holder_id, {'reason', 'replaced', 'replaced_by', id})
    end
  end
end

local fields = {}
for i = 12, #ARGV do table.insert(fields, ARGV[i]) end
local snapshot = store_new_job(new_job_keys(KEYS[1], KEYS[2], 3), {id = id, queue = queue, class = ARGV[3], class_json = ARGV[4], rank_base = ARGV[5],
                                   scheduled_at = scheduled_at, fields = fields}, now)
if ARGV[10] ~= '' then
  redis.call('SET', KEYS[10], queue .. ' ' .. id, 'PX', ARGV[10])
else
  redis.call('SET', KEYS[10], queue .. ' ' .. id)
end
return {'ok', snapshot}
