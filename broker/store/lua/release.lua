-- RELEASE: a held job goes back where HOLD took it from (hold.lua): to
-- its ready set at its old place in line (its FIFO sequence, in the band of its
-- current rank base: an update while held may have moved the band), or to the
-- delayed zset at its old due time (promotion makes it available when due).
-- Its expiry and its wait for a reservation are listed again (the maintenance dropped
-- them while it was held): a job whose expires_at or reservation timeout passed
-- meanwhile is discarded by the next pass, as if it had never been held.
-- KEYS (8): 1 job hash, 2 ready prefix (+ the job's class), 3 delayed, 4 class heads,
--           5 on-hold set (keys.hpp on_hold), 6 events, 7 expiring index (keys.hpp
--           expiring), 8 reservation waits
-- ARGV: who (the caller's identity name)
-- Reply: {'ok'} | {'not_found'} | {'conflict', state}
-- The job is not in the reply: JobControlStore reads it back natively behind the call.
local jk, who = KEYS[1], ARGV[1]
local job = read_fields(jk, {'id', 'state', 'held_from', 'held_score', 'held_due', 'held_reservation_due', 'class',
                             'rank_base', 'order_base', 'expires_at', 'type', 'queue', 'attempt', 'tenant'})  -- and emit's
if not job then return {'not_found'} end
if job.state ~= 'pending' or not job.held_from then return {'conflict', job.state} end
local from = job.held_from
if from == 'available' then
  local _, seq = score_unpack(tonumber(job.held_score))
  ready_add(KEYS[4], KEYS[2] .. job.class, job.class,
            string.format('%.0f', score_at(tonumber(job.order_base or job.rank_base), seq)), job.id)
else
  redis.call('ZADD', KEYS[3], job.held_due, job.id)
end
if job.expires_at then redis.call('ZADD', KEYS[7], job.expires_at, job.id) end
if job.held_reservation_due then redis.call('ZADD', KEYS[8], job.held_reservation_due, job.id) end
redis.call('HSET', jk, 'state', from)
redis.call('HDEL', jk, 'held_by', 'held_from', 'held_score', 'held_due', 'held_at', 'held_reservation_due')
redis.call('ZREM', KEYS[5], job.id)
emit(KEYS[6], 'job.released', job, {'released_by', who})
return {'ok'}
