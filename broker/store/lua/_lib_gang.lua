-- ext_ml_gang helpers (docs/matching.md "Gangs"). A gang is one job hash
-- whose members are held on several workers. Fields: gang_size (the members it
-- starts with), gang_max_size (elastic gangs only: the most it grows to), gang_label,
-- gang_timeout_ms (PUSH); while forming or running gang_workers (JSON worker ids
-- by rank), gang_members (JSON [{worker_id, rank, gpus, devices, address, port,
-- label}]), gang_deadline (ms, while forming), gang_start (start counter),
-- gang_generation (running: 1 at the start, +1 per resize); gang_acked (JSON ranks)
-- and gang_result (rank 0's) as members ACK. A running elastic gang also keeps
-- gang_grow_score (its place among the growing gangs) and, while members are told to
-- leave, gang_leaving (JSON {worker_id: deadline ms}).

-- The 0-based rank of `worker` in the job's gang; nil when it is no member.
local function gang_rank(job, worker)
  if not job.gang_workers or worker == '' then return nil end
  for i, w in ipairs(cjson.decode(job.gang_workers)) do
    if w == worker then return i - 1 end
  end
  return nil
end

-- Whether `worker` holds the job: the worker it was claimed by, or (gang) any member.
local function held_by(job, worker)
  return job.worker_id == worker or gang_rank(job, worker) ~= nil
end

-- The gang goes down as one: members are forgotten (their GPUs are in the job's
-- charged_gpus, which release_budget gives back); it re-forms from scratch.
local function gang_reset(jk, job)
  if not job.gang_workers then return end
  job.gang_workers, job.gang_members, job.gang_deadline, job.gang_acked, job.gang_result = nil, nil, nil, nil, nil
  job.gang_generation, job.gang_leaving = nil, nil
  redis.call('HDEL', jk, 'gang_workers', 'gang_members', 'gang_deadline', 'gang_acked', 'gang_result', 'gang_generation',
             'gang_leaving')
end

-- A member's ACK: nil while ranks are missing, else the result the completed job
-- keeps (rank 0's). An ACK naming no worker (plain OJS) completes the gang. The
-- ranks are the members it runs with now (an elastic gang may have grown past gang_size).
local function gang_ack(jk, job, worker, result)
  if worker == '' then return result end
  local rank = gang_rank(job, worker)
  local acked, seen = job.gang_acked and cjson.decode(job.gang_acked) or {}, false
  for _, r in ipairs(acked) do
    if r == rank then seen = true end
  end
  if not seen then acked[#acked + 1] = rank end
  job.gang_acked = cjson.encode(acked)
  redis.call('HSET', jk, 'gang_acked', job.gang_acked)
  if rank == 0 and result ~= '' then
    job.gang_result = result
    redis.call('HSET', jk, 'gang_result', result)
  end
  if #acked < #cjson.decode(job.gang_workers) then return nil end
  return job.gang_result or ''
end

-- A forming gang whose hold deadline passed (or that ended meanwhile) leaves the
-- queue's forming slot; a waiting one releases every member and goes to the back
-- of its class (new FIFO seq), so the next gang of the queue gets its turn. One
-- that timed out also backs off (gang_retry_at): it is not held again for as
-- long as it held, so the workers it held run the jobs that fit them meanwhile
-- instead of being re-held at once by a gang that may never complete.
-- g: {gangs, seq, heads, events, ledger, tenant_ledger, job_prefix, ready_prefix}
local function gang_release(g, id, now, reason)
  redis.call('ZREM', g.gangs, id)
  local jk = g.job_prefix .. id
  local job = read_job(jk)
  if not job or job.state ~= 'available' or not job.gang_workers then return 0 end
  local held = job.gang_workers
  release_budget({ledger = g.ledger, tenant_ledger = g.tenant_ledger}, jk, job)
  if reason == 'gang_timeout' then
    redis.call('HSET', jk, 'gang_retry_at', now + tonumber(job.gang_timeout_ms or '60000'))
  end
  gang_reset(jk, job)
  local ready = g.ready_prefix .. job.class
  ready_remove(g.heads, ready, job.class, id)
  make_available({seq = g.seq, heads = g.heads, ready = ready}, jk, job, now)
  emit(g.events, 'job.gang_released', job, {'workers', held, 'reason', reason})
  return 1
end

-- Whether a gang head backs off after a hold that timed out (gang_release).
local function gang_backing_off(job, now)
  return tonumber(job.gang_retry_at or '0') > now
end

local function gang_release_expired(g, now)
  local released = 0
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', g.gangs, '-inf', now, 'LIMIT', 0, 100)) do
    released = released + gang_release(g, id, now, 'gang_timeout')
  end
  return released
end


-- Running elastic gangs that may grow (keys.hpp gangs_growing): an entry whose gang
-- ended, re-forms, filled up or began to finish (a rank ACKed) leaves. Looks at the
-- first `limit` entries: the ones a grow decision reads.
local function gang_growing_sweep(growing, job_prefix, limit)
  for _, id in ipairs(redis.call('ZRANGE', growing, 0, limit - 1)) do
    local f = redis.call('HMGET', job_prefix .. id, 'state', 'gang_workers', 'gang_max_size', 'gang_acked')
    local full = not f[2] or #cjson.decode(f[2]) >= tonumber(f[3] or '0')
    if f[1] ~= 'active' or full or f[4] then redis.call('ZREM', growing, id) end
  end
end

-- Members of a running elastic gang leave one at a time instead of the gang going
-- down (docs/matching.md "Shrink"). The members told to leave: {worker_id: deadline}.
local function gang_leaving_of(job)
  local leaving = job.gang_leaving and cjson.decode(job.gang_leaving)
  return type(leaving) == 'table' and leaving or {}
end

local function gang_count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

-- The entry of the preempting index (keys.hpp preempting) for a member that leaves:
-- the job id and the worker, so the reclaim of an overdue one takes only that member.
local function gang_leave_entry(id, worker)
  return id .. '\t' .. worker
end

-- Why `worker` may not be told to leave the job's gang now (nil: it may). The gang
-- never goes below its minimum: members - leaving - 1 >= gang_size, judged here, in
-- the commit, so two brokers cannot both take the last spare member.
local function gang_leave_refusal(job, worker)
  if job.state ~= 'active' then return 'not running' end
  if not job.gang_max_size or not job.gang_workers then return 'not an elastic gang' end
  if job.gang_acked then return 'finishing' end
  if job.preempt_deadline then return 'preempted whole' end
  local rank = gang_rank(job, worker)
  if not rank then return 'not a member' end
  if rank == 0 then return 'the rendezvous' end  -- rank 0 hosts the rendezvous: it stays
  local leaving = gang_leaving_of(job)
  if leaving[worker] then return 'already leaving' end
  local members = #cjson.decode(job.gang_workers)
  if members - gang_count(leaving) - 1 < tonumber(job.gang_size or '1') then return 'at its minimum' end
  return nil
end

-- The member on `worker` leaves: it is taken out of the members (the ranks after it
-- move down by one; rank 0 never leaves), its GPUs leave the job's charge and the
-- ledgers, the generation goes up so the others restart at the new size, and the gang
-- grows again later from its place in the queue. l: {ledger, tenant_ledger, growing,
-- usage, events}. Returns the new size.
local function gang_member_leave(l, jk, job, worker, now)
  local members, workers, kept = cjson.decode(job.gang_members), {}, {}
  local gone = nil
  for _, m in ipairs(members) do
    if m.worker_id == worker then
      gone = m
    else
      m.rank = #kept
      kept[#kept + 1] = m
      workers[#workers + 1] = m.worker_id
    end
  end
  local leaving = gang_leaving_of(job)
  leaving[worker] = nil
  local set = {'gang_members', cjson.encode(kept), 'gang_workers', cjson.encode(workers)}
  local gpus = tonumber(gone.gpus or 0) or 0
  local charged = tonumber(job.charged_gpus or '0')
  if gpus > 0 and charged > 0 then
    gpus = math.min(gpus, charged)
    local mem = tonumber(job.charged_gpu_mem_mb or '0')
    local mem_share = math.floor(mem * gpus / charged)
    redis.call('HINCRBY', l.ledger, 'gpus', int_s(-gpus))
    if job.tenant and job.tenant ~= '' then redis.call('HINCRBY', l.tenant_ledger, job.tenant, int_s(-gpus)) end
    set[#set + 1] = 'charged_gpus'; set[#set + 1] = int_s(charged - gpus)
    if mem_share > 0 then
      redis.call('HINCRBY', l.ledger, 'gpu_mem_mb', int_s(-mem_share))
      set[#set + 1] = 'charged_gpu_mem_mb'; set[#set + 1] = int_s(mem - mem_share)
    end
    local borrowed = math.min(gpus, tonumber(job.borrowed_gpus or '0'))
    if borrowed > 0 then
      redis.call('HINCRBY', l.ledger, 'borrowed_gpus', int_s(-borrowed))
      set[#set + 1] = 'borrowed_gpus'; set[#set + 1] = int_s(tonumber(job.borrowed_gpus) - borrowed)
    end
    local half_life = job.usage_run and string.match(job.usage_run, '^h(%d+)$')
    if half_life then usage_held_move(l.usage, usage_tenant(job), {gpus, 0, 0, mem_share}, -1, now, tonumber(half_life)) end
  end
  job.gang_generation = tostring(tonumber(job.gang_generation or '1') + 1)
  set[#set + 1] = 'gang_generation'; set[#set + 1] = job.gang_generation
  redis.call('HSET', jk, unpack(set))
  if gang_count(leaving) > 0 then
    redis.call('HSET', jk, 'gang_leaving', cjson.encode(leaving))
  else
    redis.call('HDEL', jk, 'gang_leaving')
  end
  if job.gang_grow_score then redis.call('ZADD', l.growing, job.gang_grow_score, job.id) end
  emit(l.events, 'job.gang_resized', job, {'worker_id', worker, 'from', #members, 'to', #kept,
                                           'generation', job.gang_generation, 'reason', 'left'})
  return #kept
end
