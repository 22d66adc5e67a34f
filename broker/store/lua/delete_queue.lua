-- Admin DELETE of an empty queue: refuses while any job waits, runs,
-- is scheduled or sits in the dead letter; else deletes the queue's keys.
-- The ready sets are found here, from the classes hash, not from a list the
-- broker read before the call: a PUSH of a new class in between would leave its
-- job in a ready set nobody counted, stranded once classes and heads are gone.
-- KEYS (28): 1 classes hash, 2 ready prefix (+ each class id read from 1), 3 active,
--            4 delayed, 5 dead, 6 config hash, 7 diag prefix (+ each class id),
--            8-23 the other keys to delete (classes:ver, paused, stats, events, ledger,
--            tenant-quotas, tenant-ledger, preempting, escalations, reservation-waits,
--            class heads, rate window, expiring index, the finished indexes of
--            completed, discarded and cancelled jobs), 24 the on-hold set
--            (held jobs count as jobs: a queue holding one is not empty), 25-28
--            the usage hash, totals, hourly rollup and journal (deleted with the queue)
-- ARGV: (none)
-- Reply: {'ok'} or {'not_empty', jobs}
local classes = {}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if is_class_field(field) then classes[#classes + 1] = field end  -- not the job counts
end
local jobs = 0
for _, class in ipairs(classes) do jobs = jobs + redis.call('ZCARD', KEYS[2] .. class) end
for i = 3, 5 do jobs = jobs + redis.call('ZCARD', KEYS[i]) end
jobs = jobs + redis.call('ZCARD', KEYS[24])
if jobs > 0 then return {'not_empty', jobs} end
-- The configuration goes, its version stays (bumped): a broker's cached copy of the
-- old queue's config never matches a new one of the same name (push.lua's check).
local version = redis.call('HINCRBY', KEYS[6], 'version', 1)
redis.call('DEL', KEYS[6])
redis.call('HSET', KEYS[6], 'version', version)
for _, class in ipairs(classes) do redis.call('DEL', KEYS[7] .. class) end
redis.call('DEL', KEYS[1])
for i = 8, #KEYS do redis.call('DEL', KEYS[i]) end
return {'ok'}
