-- FETCH of gang jobs (ext_ml_gang, docs/matching.md "Gangs"): the commit of
-- the broker's pick (scheduling/gang_decision.cpp decides it over
-- gang_candidates.lua's read; nothing is chosen here). In order:
-- 1. a started gang not yet delivered to this held member is delivered;
-- 2. forming gangs past their hold deadline release their members; the forming gang
--    is released if its job moved on, discarded if it expired;
-- 3. a worker already held by the forming gang waits; else the pick is checked to
--    still hold (join: it is the forming gang; form: no gang forms, and the job still
--    waits in its class, not expired nor backing off; grow: the running elastic gang
--    is still below its max_size and no rank has ACKed) and the worker joins it, else
--    the reply is 'stale' and the broker decides again. Only one gang per queue holds
--    members, so two half-built gangs never wait on each other's workers.
-- The member that completes the gang (gang_size members: an elastic gang's min_size)
-- starts it: the job turns active on all members at once, this worker gets it now,
-- the others on their next FETCH. A worker that grows a running gang gets it at once;
-- the gang's generation goes up and the others learn the new size from their next
-- heartbeat (gang_facts.lua).
-- The queue rate limit binds a gang as one job (room to start forming it, and to
-- start it), and a gang past its expires_at is discarded instead of held or started.
-- KEYS (29 + 2n): 1 paused, 2 job prefix, 3 ready prefix, 4 gangs, 5 gang deliveries,
--   6 active, 7 events, 8 config, 9 ledger, 10 tenant quotas, 11 tenant ledger, 12 seq,
--   13 class heads, 14 stats, 15 rate window, 16 this worker's held set (keys.hpp held),
--   17-27 workflow keys (_lib_workflows.lua: an expired step ends its workflow's step),
--   28 finished prefix (keys.hpp finished_prefix), 29 the queue's usage hash (keys.hpp usage),
--   n = 0 or 1 (a pick): 30 the picked class's ready set, 31 the growing elastic gangs (keys.hpp gangs_growing)
-- ARGV: worker_id, request_visibility_ms ('' = none), default_visibility_ms, rendezvous
--   address, rendezvous port, then the pick: 'join' | 'form' | 'grow' | '' (none), the job
--   id, its class id, GPUs per member, assigned devices JSON ('' = none), the worker's value
--   of the gang's same_label, the GPU memory (MB) the member would hold (charged to a
--   GPU-memory budget); then the ids of class heads the broker saw expired (discarded
--   here when they still wait, as the expiry sweep would)
-- Reply: {'start', job fields, rank} | {'held' (joined now) | 'waiting' (held before), job id, rank, class id}
--        | {'none'} | {'stale'} | {'rate_limited', concurrency | rate}
--        | {'blocked', class, in_use, limit, kind}
local worker, request_vis, default_vis, address, port =
  ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local now = now_ms()

-- 1. Deliveries: "worker\tid\tstart" (lex order, so one range finds this worker's).
local pending = redis.call('ZRANGEBYLEX', KEYS[5], '[' .. worker .. '\t', '(' .. worker .. '\n', 'LIMIT', 0, 10)
for _, entry in ipairs(pending) do
  redis.call('ZREM', KEYS[5], entry)
  local id, start = string.match(entry, '^[^\t]*\t([^\t]*)\t(%d+)$')
  local job = id and read_job(KEYS[2] .. id)
  if job and job.state == 'active' and job.gang_start == start then
    local rank = gang_rank(job, worker)
    if rank then return {'start', flat_job(job), rank} end
  end
end

if redis.call('EXISTS', KEYS[1]) == 1 then return {'none'} end
local g = {gangs = KEYS[4], seq = KEYS[12], heads = KEYS[13], events = KEYS[7], ledger = KEYS[9], tenant_ledger = KEYS[11],
           job_prefix = KEYS[2], ready_prefix = KEYS[3]}
gang_release_expired(g, now)

-- expires_at passed: the gang is discarded (its held members released first).
local function expired(job)
  local at = tonumber(job.expires_at or '')
  if not at or at > now then return false end
  local jk = KEYS[2] .. job.id
  if job.gang_workers then
    release_budget({ledger = g.ledger, tenant_ledger = g.tenant_ledger}, jk, job)
    gang_reset(jk, job)
  end
  redis.call('ZREM', KEYS[4], job.id)
  ready_remove(KEYS[13], KEYS[3] .. job.class, job.class, job.id)
  discard_expired(jk, job, KEYS[14], KEYS[7], KEYS[28], now)
  workflow_job_ended(workflow_keys(KEYS, 17, KEYS[7]), job, 'failed', now)  -- as any discard
  return true
end

for i = 13, #ARGV do
  local head = read_job(KEYS[2] .. ARGV[i])
  if head and head.state == 'available' and not head.gang_workers then expired(head) end
end

-- 3. The forming gang, as it stands now.
local job = nil
local forming = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
if forming then
  job = read_job(KEYS[2] .. forming)
  if not job or job.state ~= 'available' or not job.gang_workers then
    gang_release(g, forming, now, 'ended')
    job, forming = nil, nil
  elseif expired(job) then
    job, forming = nil, nil
  else
    local rank = gang_rank(job, worker)
    if rank then return {'waiting', forming, rank, job.class} end
  end
end
local kind, pick = ARGV[6], ARGV[7]
if kind == '' then return {'none'} end
local class_at = 8  -- the pick's class values: ARGV[8..12]
local gpus, devices, label = tonumber(ARGV[class_at + 1]), ARGV[class_at + 2], ARGV[class_at + 3]
local mem = tonumber(ARGV[class_at + 4]) or 0
if #KEYS >= 31 then gang_growing_sweep(KEYS[31], KEYS[2], 10) end

-- Budget and tenant quota bind each member's GPUs (one GPU job per gang): nil when
-- the member fits, else the 'blocked' reply.
local function member_blocked(job)
  local over = budget_block({config = KEYS[8], ledger = KEYS[9]}, gpus, mem)
  if over and over[3] == 'max_concurrent_gpu_jobs' and tonumber(job.charged_gpus or '0') > 0 then over = nil end  -- the gang already counts
  over = over or tenant_block({tenant_quotas = KEYS[10], tenant_ledger = KEYS[11]}, job.tenant, gpus)
  if over then return {'blocked', ARGV[class_at], over[1], over[2], over[3]} end
  return nil
end

-- Appends this worker as the next member and charges its GPUs; returns the
-- fields to HSET (the members, and the charges that changed) and its rank.
local function add_member(job, members, workers)
  local charged = tonumber(job.charged_gpus or '0')
  local rank = #members
  members[#members + 1] = {worker_id = worker, rank = rank, gpus = gpus, devices = devices, address = address,
                           port = port, label = label}
  workers[#workers + 1] = worker
  job.gang_members, job.gang_workers = cjson.encode(members), cjson.encode(workers)
  local set = {'gang_members', job.gang_members, 'gang_workers', job.gang_workers}
  if gpus > 0 then
    redis.call('HINCRBY', KEYS[9], 'gpus', gpus)
    if charged == 0 then redis.call('HINCRBY', KEYS[9], 'gpu_jobs', 1) end
    if job.tenant and job.tenant ~= '' then redis.call('HINCRBY', KEYS[11], job.tenant, gpus) end
    job.charged_gpus = charged + gpus
    set[#set + 1] = 'charged_gpus'; set[#set + 1] = job.charged_gpus
    -- A member charged above a cohort member's nominal share is borrowed, as a claim's job is.
    local borrowed = budget_borrow({ledger = KEYS[9]}, gpus)
    if borrowed > 0 then
      job.borrowed_gpus = int_s(tonumber(job.borrowed_gpus or '0') + borrowed)
      set[#set + 1] = 'borrowed_gpus'; set[#set + 1] = job.borrowed_gpus
    end
    if mem > 0 then  -- every member's memory, given back with the rest by release_budget
      redis.call('HINCRBY', KEYS[9], 'gpu_mem_mb', int_s(mem))
      job.charged_gpu_mem_mb = int_s(tonumber(job.charged_gpu_mem_mb or '0') + mem)
      set[#set + 1] = 'charged_gpu_mem_mb'; set[#set + 1] = job.charged_gpu_mem_mb
    end
  end
  return set, rank
end

-- Grow: a running elastic gang takes this worker as its next member. The members
-- it had keep their ranks (rank 0, the rendezvous, stays); the generation tells
-- them to restart at the new size.
if kind == 'grow' then
  local jk = KEYS[2] .. pick
  local job = read_job(jk)
  local max = job and tonumber(job.gang_max_size or '')
  if not job or job.state ~= 'active' or not job.gang_workers or job.class ~= ARGV[8] or not max or job.gang_acked then
    redis.call('ZREM', KEYS[31], pick)
    return {'stale'}
  end
  if gang_rank(job, worker) then return {'stale'} end
  local members, workers = cjson.decode(job.gang_members), cjson.decode(job.gang_workers)
  if #members >= max then
    redis.call('ZREM', KEYS[31], pick)
    return {'stale'}
  end
  if (job.gang_label or '') ~= '' and (ARGV[11] == '' or ARGV[11] ~= members[1].label) then return {'stale'} end
  local blocked = member_blocked(job)
  if blocked then return blocked end
  local from = #members
  local set, rank = add_member(job, members, workers)
  job.gang_generation = tostring(tonumber(job.gang_generation or '1') + 1)
  set[#set + 1] = 'gang_generation'; set[#set + 1] = job.gang_generation
  redis.call('HSET', jk, unpack(set))
  redis.call('SADD', KEYS[16], job.id)  -- the member's GPUs are in its worker's load from now on
  -- Under `fair` the tenant's held use grows with the gang: its end takes the whole charge away.
  local half_life = job.usage_run and string.match(job.usage_run, '^h(%d+)$')
  if half_life then usage_held_move(KEYS[29], usage_tenant(job), {gpus, 0, 0, mem}, 1, now, tonumber(half_life)) end
  if #members >= max then redis.call('ZREM', KEYS[31], job.id) end
  emit(KEYS[7], 'job.gang_resized', job, {'worker_id', worker, 'from', from, 'to', #members,
                                           'generation', job.gang_generation})
  return {'start', flat_job(job), rank}
end

if forming then
  -- Only the forming gang may hold members: the pick must be it.
  if kind ~= 'join' or pick ~= forming or ARGV[8] ~= job.class then return {'stale'} end
  local first = cjson.decode(job.gang_members)[1]
  if (job.gang_label or '') ~= '' and (ARGV[11] == '' or ARGV[11] ~= first.label) then return {'stale'} end
else
  if kind ~= 'form' then return {'stale'} end  -- the gang it was to join moved on
  job = read_job(KEYS[2] .. pick)
  if not job or job.state ~= 'available' or job.gang_workers or job.class ~= ARGV[8] or
     not redis.call('ZSCORE', KEYS[30], pick) then
    return {'stale'}
  end
  if expired(job) or gang_backing_off(job, now) then return {'stale'} end
  if (job.gang_label or '') ~= '' and ARGV[11] == '' then return {'stale'} end
end

local blocked = member_blocked(job)
if blocked then return blocked end
local members = job.gang_members and cjson.decode(job.gang_members) or {}
-- The rate limit counts the gang once: room is needed to start forming it and to start it.
local rl = redis.call('HMGET', KEYS[8], 'rate_concurrency', 'rate_limit_starts', 'rate_period_ms')
local rate_starts, rate_period = tonumber(rl[2] or ''), tonumber(rl[3] or '')
if #members == 0 or #members + 1 >= tonumber(job.gang_size) then
  local room, why = rate_room(tonumber(rl[1] or ''), rate_starts, rate_period, KEYS[6], KEYS[15], now)
  if room and room < 1 then return {'rate_limited', why} end
end
local jk = KEYS[2] .. job.id
local workers = job.gang_workers and cjson.decode(job.gang_workers) or {}
local set, rank = add_member(job, members, workers)
if rank == 0 then
  job.gang_deadline = now + tonumber(job.gang_timeout_ms or '60000')
  set[#set + 1] = 'gang_deadline'; set[#set + 1] = job.gang_deadline
  redis.call('ZADD', KEYS[4], job.gang_deadline, job.id)
end
redis.call('HSET', jk, unpack(set))
redis.call('SADD', KEYS[16], job.id)  -- the member's GPUs are in its worker's load from now on
emit(KEYS[7], 'job.gang_member_held', job, {'worker_id', worker, 'rank', rank, 'members', #members})
if #members < tonumber(job.gang_size) then return {'held', job.id, rank, job.class} end

-- Complete: every member starts with this one attempt. An elastic gang that may grow
-- keeps its place in the queue's order (its ready score) among the growing ones.
-- It keeps that score (gang_grow_score): a gang that shrank grows back from its place.
local score = redis.call('ZSCORE', KEYS[30], job.id)
if job.gang_max_size and #members < tonumber(job.gang_max_size) and score then redis.call('ZADD', KEYS[31], score, job.id) end
ready_remove(KEYS[13], KEYS[3] .. job.class, job.class, job.id)
redis.call('ZREM', KEYS[4], job.id)
job.gang_deadline = nil
redis.call('HDEL', jk, 'gang_deadline')
job.attempt = tonumber(job.attempt or '0') + 1
job.state, job.started_at, job.worker_id = 'active', now, members[1].worker_id
job.gang_start = tostring(redis.call('HINCRBY', jk, 'gang_start', 1))
local deadline, dropped = start_deadlines(job, now, request_vis, default_vis)
job.gang_generation = '1'
set = {'state', 'active', 'started_at', now, 'worker_id', job.worker_id, 'attempt', job.attempt,
       'visibility_deadline', deadline, 'gang_generation', '1'}
if job.gang_max_size and score then set[#set + 1] = 'gang_grow_score'; set[#set + 1] = score end
if job.execution_deadline then set[#set + 1] = 'execution_deadline'; set[#set + 1] = job.execution_deadline end
if dropped then redis.call('HDEL', jk, 'execution_deadline') end
-- Under `fair` the gang's attempt joins its tenant's held use as a claim's does
-- (every member's GPUs: charged_gpus); usage_ended takes it out at its end.
local policy = redis.call('HMGET', KEYS[8], 'policy', 'usage_half_life_ms')
if policy[1] == 'fair' then usage_started(KEYS[29], job, usage_amounts(job), set, now, usage_half_life(policy[2])) end
redis.call('HSET', jk, unpack(set))
redis.call('ZADD', KEYS[6], deadline, job.id)
if rate_starts and rate_period then rate_record(KEYS[15], rate_period, tostring(now), job.id .. ':' .. job.attempt) end
count_minute(KEYS[14], 'dispatched', now)  -- a gang starts as one job
for _, w in ipairs(workers) do
  if w ~= worker then redis.call('ZADD', KEYS[5], 0, w .. '\t' .. job.id .. '\t' .. job.gang_start) end
end
emit(KEYS[7], 'job.started', job, {'worker_id', job.worker_id, 'gang_workers', job.gang_workers})
return {'start', flat_job(job), rank}
