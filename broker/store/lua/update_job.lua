-- UPDATE (PATCH /jobs/{id}): a waiting (or, its priority only, running) job's document, priority and
-- requirement class replaced in one step, as the broker validated and classed them
-- (JobControl::update: the same rules as PUSH). Only while the job still waits and
-- its document is the one the broker started from (else 'stale': the broker reads
-- it again). An available job moves to the ready set of its new class keeping its
-- FIFO sequence, re-scored in its new band (as escalate.lua does); a held one keeps
-- its place in line for release (held_score); a scheduled or retryable one keeps
-- its due time and is placed by promotion.
-- KEYS (6): 1 job hash, 2 ready prefix (+ class id), 3 class heads, 4 classes hash,
--           5 classes version, 6 events
-- ARGV: 1 the document the update started from, 2 new class id, 3 its canonical JSON,
--       4 new rank_base, 5 new order_base ('' = none), 6 number n of fields to delete,
--       7 .. 6+n the fields to delete, then field/value pairs to write
-- Reply: {'ok'} | {'not_found'} | {'conflict', state} | {'stale'}
-- The job is not in the reply: JobControlStore reads it back natively behind the call.
local jk = KEYS[1]
local expected_doc, class, class_json, rank_base, order_base = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local job = read_fields(jk, {'id', 'state', 'doc', 'class', 'held_score', 'type', 'queue', 'attempt', 'tenant'})  -- and emit's
if not job then return {'not_found'} end
local s = job.state
if s ~= 'available' and s ~= 'scheduled' and s ~= 'retryable' and s ~= 'pending' and s ~= 'active' then return {'conflict', s} end
if job.doc ~= expected_doc then return {'stale'} end
-- A running job changes its rank (rank_base: preemption reads it) and document only:
-- it stays where it runs, with its attempt and charges.
if s == 'active' and class ~= job.class then return {'conflict', 'active (its requirement class cannot change while it runs)'} end
if class ~= job.class then  -- the job's count moves with it; an emptied class goes
  class_enter(KEYS[4], KEYS[5], class, class_json)
  class_leave(KEYS[4], KEYS[5], job.class)
end
local base = tonumber(order_base ~= '' and order_base or rank_base)
local set = {'class', class, 'rank_base', rank_base}
if order_base ~= '' then set[#set + 1], set[#set + 2] = 'order_base', order_base end
if s == 'available' then
  local old_ready = KEYS[2] .. job.class
  local score = redis.call('ZSCORE', old_ready, job.id)
  if not score then return {'conflict', s} end
  local _, seq = score_unpack(tonumber(score))
  ready_remove(KEYS[3], old_ready, job.class, job.id)
  ready_add(KEYS[3], KEYS[2] .. class, class, string.format('%.0f', score_at(base, seq)), job.id)
elseif s == 'pending' and job.held_score then
  local _, seq = score_unpack(tonumber(job.held_score))
  set[#set + 1], set[#set + 2] = 'held_score', string.format('%.0f', score_at(base, seq))
end
local n = tonumber(ARGV[6])
local del = {}
for i = 7, 6 + n do del[#del + 1] = ARGV[i] end
if order_base == '' then del[#del + 1] = 'order_base' end
if #del > 0 then redis.call('HDEL', jk, unpack(del)) end
for i = 7 + n, #ARGV do set[#set + 1] = ARGV[i] end
hset_slices(jk, set, 1, #set)
emit(KEYS[6], 'job.updated', job, {'class', class})
return {'ok'}
