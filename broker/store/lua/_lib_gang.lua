-- ext_ml_gang helpers (docs/matching.md "Gangs"). A gang is one job hash
-- whose members are held on several workers. Fields: gang_size (the members it
-- starts with), gang_max_size (elastic gangs only: the most it grows to), gang_label,
-- gang_timeout_ms (PUSH); while forming or running gang_workers (JSON worker ids
-- by rank), gang_members (JSON [{worker_id, rank, gpus, devices, address, port,
-- label}]), gang_deadline (ms, while forming), gang_start (start counter),
-- gang_generation (running: 1 at the start, +1 per resize); gang_acked (JSON ranks)
-- and gang_result (rank 0's) as members ACK.

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
  job.gang_generation = nil
  redis.call('HDEL', jk, 'gang_workers', 'gang_members', 'gang_deadline', 'gang_acked', 'gang_result', 'gang_generation')
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
