-- HOLD: a waiting job (available, scheduled, retryable) leaves scheduling
-- until released: state `pending` (OJS core: staged, awaiting activation), out of
-- its ready set or the delayed zset and into the queue's on-hold set, so no claim
-- can see it (claim.lua needs no check of its own). What release needs to put it
-- back where it was is kept on the job: held_from (the state), held_score (its
-- ready-set score: its place in line) or held_due (its delayed-zset due time).
-- Holding a held job changes nothing (the first holder stays). A gang forming on its
-- workers is refused: their GPUs are charged to it and only its release (claim_gang,
-- gang_expire) gives them back, which skips a job that is no longer available.
-- The job's wait for its reservation (reservation waits) is kept as held_reservation_due:
-- the maintenance drops entries of jobs that do not wait, so release puts it back
-- (and its expiry entry, for the same reason).
-- KEYS (8): 1 job hash, 2 ready prefix (+ the job's class), 3 delayed, 4 class heads,
--           5 on-hold set (keys.hpp on_hold), 6 events, 7 expiring index (release's),
--           8 reservation waits
-- ARGV: who (the caller's identity name)
-- Reply: {'ok'} | {'not_found'} | {'conflict', state} | {'conflict', 'gang_forming'}
-- The job is not in the reply: JobControlStore reads it back natively behind the call.
local jk, who = KEYS[1], ARGV[1]
local job = read_fields(jk, {'id', 'state', 'held_by', 'gang_workers', 'class', 'type', 'queue', 'attempt', 'tenant'})  -- and emit's
if not job then return {'not_found'} end
if job.state == 'pending' and job.held_by then return {'ok'} end
if job.gang_workers then return {'conflict', 'gang_forming'} end
local set = {'state', 'pending', 'held_by', who, 'held_from', job.state}
if job.state == 'available' then
  local ready = KEYS[2] .. job.class
  local score = redis.call('ZSCORE', ready, job.id)
  if not score then return {'conflict', job.state} end
  ready_remove(KEYS[4], ready, job.class, job.id)
  set[#set + 1], set[#set + 2] = 'held_score', score
elseif job.state == 'scheduled' or job.state == 'retryable' then
  local due = redis.call('ZSCORE', KEYS[3], job.id)
  if not due then return {'conflict', job.state} end
  redis.call('ZREM', KEYS[3], job.id)
  set[#set + 1], set[#set + 2] = 'held_due', due
else
  return {'conflict', job.state}
end
local waits = redis.call('ZSCORE', KEYS[8], job.id)
if waits then set[#set + 1], set[#set + 2] = 'held_reservation_due', waits end
local now = int_s(now_ms())
set[#set + 1], set[#set + 2] = 'held_at', now
redis.call('HSET', jk, unpack(set))
redis.call('ZADD', KEYS[5], now, job.id)
emit(KEYS[6], 'job.held', job, {'held_by', who})
return {'ok'}
