-- Preemption controller: one member of a running elastic gang is told to leave
-- (docs/matching.md "Shrink"), instead of the whole gang being preempted. Only that
-- member's worker gets the preempt directive (grace period, checkpoint); the gang
-- runs on, and the member is taken out when its worker releases it (gang_left.lua)
-- or its deadline passes. Refused when the gang would fall below its minimum counting
-- the members already leaving, so two brokers can never both take the last spare one.
-- KEYS (3): 1 job hash, 2 preempting, 3 events
-- ARGV: preemptor job id, worker_id, grace_s, checkpoint ('1'|'0')
-- Reply: {'ok', deadline} | {'conflict', why}
local jk, worker, grace = KEYS[1], ARGV[2], tonumber(ARGV[3])
local job = read_job(jk)
if not job then return {'conflict', 'gone'} end
local why = gang_leave_refusal(job, worker)
if why then return {'conflict', why} end
local now = now_ms()
local deadline = now + grace * 1000
local leaving = gang_leaving_of(job)
leaving[worker] = {deadline_ms = deadline, preempted_for = ARGV[1], grace_period_s = grace, checkpoint = ARGV[4] == '1'}
redis.call('HSET', jk, 'gang_leaving', cjson.encode(leaving))
redis.call('ZADD', KEYS[2], deadline, gang_leave_entry(job.id, worker))
emit(KEYS[3], 'job.preempting', job, {'preempted_for', ARGV[1], 'worker_id', worker, 'deadline_ms', tostring(deadline),
                                      'leave', '1'})
return {'ok', tostring(deadline)}
