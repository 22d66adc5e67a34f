-- Sets the GPU share a cohort member may hold now (cohort_max_gpus, which claim.lua's
-- budget check reads in place of max_total_gpus), or removes it ('' : the queue left
-- its cohort). Only the controller holding the lease writes, each pass under a new
-- epoch; a write under an older epoch than the one stored (a controller that lost
-- its lease mid-pass) is refused, so it never undoes a newer pass's lowering.
-- KEYS (1): 1 the queue's config hash
-- ARGV: 1 epoch, 2 share ('' = none)
-- Reply: 1 written, 0 refused (a newer epoch wrote it)
local stored = tonumber(redis.call('HGET', KEYS[1], 'cohort_epoch') or '0')
if tonumber(ARGV[1]) < stored then return 0 end
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'cohort_max_gpus', 'cohort_epoch')
else
  redis.call('HSET', KEYS[1], 'cohort_max_gpus', ARGV[2], 'cohort_epoch', ARGV[1])
end
return 1
