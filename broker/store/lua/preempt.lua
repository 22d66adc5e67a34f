-- Preemption controller: mark victims of one queue as preempting, all or none.
-- The job stays active on its worker; heartbeat/FETCH replies carry the directive
-- until the worker releases it (NACK requeue) or the deadline passes (reclaimed).
-- KEYS (2 + n): 1 preempting, 2 events, then the job hash of each victim (in ARGV order)
-- ARGV: preemptor job id, worker_id, then per victim: id, grace_s, checkpoint ('1'|'0')
-- Reply: {'ok', {id, deadline, ...}} or {'conflict', id} (a victim changed: mark nothing)
local preemptor, worker = ARGV[1], ARGV[2]
local jobs = {}
for i = 3, #ARGV, 3 do
  local jk = KEYS[3 + (i - 3) / 3]
  local f = redis.call('HMGET', jk, 'state', 'worker_id', 'preempt_deadline', 'type', 'queue', 'attempt', 'gang_workers', 'tenant')
  -- a gang member's worker preempts the whole gang: the mark is on the one job all members hold
  if f[1] ~= 'active' or not held_by({worker_id = f[2], gang_workers = f[7] or nil}, worker) or f[3] then return {'conflict', ARGV[i]} end
  jobs[#jobs + 1] = {id = ARGV[i], type = f[4], queue = f[5], attempt = f[6], tenant = f[8] or nil}
end
local now = now_ms()
local marked = {}
for i = 3, #ARGV, 3 do
  local n = 1 + (i - 3) / 3
  local id, grace, checkpoint = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local deadline = now + grace * 1000
  redis.call('HSET', KEYS[2 + n], 'preempt_deadline', deadline, 'preempted_for', preemptor,
             'preempt_grace_s', grace, 'preempt_checkpoint', checkpoint,
             'preemption', cjson.encode({preempted_for = preemptor, worker_id = worker, grace_period_s = grace,
                                         checkpoint = checkpoint == '1', requested_at_ms = now, deadline_ms = deadline}))
  redis.call('ZADD', KEYS[1], deadline, id)
  emit(KEYS[2], 'job.preempting', jobs[n], {'preempted_for', preemptor, 'worker_id', worker, 'deadline_ms', tostring(deadline)})
  marked[#marked + 1] = id; marked[#marked + 1] = tostring(deadline)
end
return {'ok', marked}
