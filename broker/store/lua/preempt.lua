-- Preemption controller: mark victims of one queue as preempting, all or none.
-- The job stays active on its worker; heartbeat/FETCH replies carry the directive
-- until the worker releases it (NACK requeue) or the deadline passes (reclaimed).
-- ARGV: prefix, preemptor job id, worker_id, then per victim: id, grace_s, checkpoint ('1'|'0')
-- Reply: {'ok', {id, deadline, ...}} or {'conflict', id} (a victim changed: mark nothing)
local prefix, preemptor, worker = ARGV[1], ARGV[2], ARGV[3]
for i = 4, #ARGV, 3 do
  local f = redis.call('HMGET', job_key(prefix, ARGV[i]), 'state', 'worker_id', 'preempt_deadline')
  if f[1] ~= 'active' or f[2] ~= worker or f[3] then return {'conflict', ARGV[i]} end
end
local now = now_ms()
local marked = {}
for i = 4, #ARGV, 3 do
  local id, grace, checkpoint = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local deadline = now + grace * 1000
  redis.call('HSET', job_key(prefix, id), 'preempt_deadline', deadline, 'preempted_for', preemptor,
             'preempt_grace_s', grace, 'preempt_checkpoint', checkpoint,
             'preemption', cjson.encode({preempted_for = preemptor, worker_id = worker, grace_period_s = grace,
                                         checkpoint = checkpoint == '1', requested_at_ms = now, deadline_ms = deadline}))
  redis.call('ZADD', prefix .. 'preempting', deadline, id)
  emit(prefix, 'job.preempting', id, {'preempted_for', preemptor, 'worker_id', worker, 'deadline_ms', tostring(deadline)})
  table.insert(marked, id); table.insert(marked, tostring(deadline))
end
return {'ok', marked}
