-- Shared helpers, defined once at the top of the Redis Function library that
-- holds every script (broker/store/lua_scripts.cpp builds it).
-- Every key a helper touches is passed to it, and every such key was declared in
-- the calling script's KEYS. The only keys formed inside a script are a declared
-- prefix key (job prefix ojs:{q}:job:, ready prefix ojs:{q}:ready:, held prefix
-- ojs:{q}:held:) plus an id read from a declared key: same hash tag, so the same slot.
-- Each script reads a job hash once (read_job) and works on that table.

-- The state of one call (what a claim reads once for all its classes). The library
-- outlives its calls, so each function's wrapper starts with begin_call, which
-- replaces this table; no other top-level local may change (cmake/embed_lua.cmake).
local per_call = {}
local function begin_call() per_call = {} end

-- An integral number as text. tostring (and a number handed to redis.call)
-- formats with '%.14g' / '%.17g', several thousand instructions each; '%d' is a
-- fraction of that (~1.7k), and the small numbers that most calls format (an
-- attempt, a GPU count, a range bound) are looked up instead (~0.1k). The table is a
-- literal: a library's load runs without `string` (no loop could fill it).
local INT_TEXT = {[0] = '0', [-1] = '-1', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14',
                  '15', '16', '17', '18', '19', '20', '21', '22', '23', '24', '25', '26', '27', '28', '29', '30',
                  '31', '32', '33', '34', '35', '36', '37', '38', '39', '40', '41', '42', '43', '44', '45', '46',
                  '47', '48', '49', '50', '51', '52', '53', '54', '55', '56', '57', '58', '59', '60', '61', '62',
                  '63', '64', '65', '66', '67', '68', '69', '70', '71', '72', '73', '74', '75', '76', '77', '78',
                  '79', '80', '81', '82', '83', '84', '85', '86', '87', '88', '89', '90', '91', '92', '93', '94',
                  '95', '96', '97', '98', '99'}
local function int_s(n) return INT_TEXT[n] or string.format('%d', n) end

-- A number from text, as tonumber reads it; '0' and '1' (a GPU count, an
-- absent hold, charge or memory) without tonumber's strtod (~1-2k instructions each).
local function text_number(s)
  if s == '0' then return 0 elseif s == '1' then return 1 end
  return tonumber(s)
end

-- Redis TIME, read once per call (per_call.time): a script's clock does not move
-- while it runs, and each TIME is ~15k instructions. Its reply's two values
-- (seconds, microseconds) are parsed in place, once for now_ms and usage_clock_us
-- (a tonumber is ~1.5k instructions).
local function redis_time()
  local t = per_call.time
  if not t then
    t = redis.call('TIME')
    t[1], t[2] = tonumber(t[1]), tonumber(t[2])
    per_call.time = t
  end
  return t
end

local function now_ms()
  local t = redis_time()
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- The job hash as a table (nil when the job does not exist): one HGETALL. Also
-- returns the hash as read (field/value pairs).
local function read_job(jk)
  local flat = redis.call('HGETALL', jk)
  if #flat == 0 then return nil end
  local job = {}
  for i = 1, #flat, 2 do job[flat[i]] = flat[i + 1] end
  return job, flat
end

-- Only the named fields of a job hash (one HMGET), as a table without the absent
-- ones; nil when the job does not exist (names[1] and names[2] are 'id' and 'state').
-- A lean transition reads what it and its helpers test, never the document: each
-- value read into Lua costs ~0.8k instructions, and the broker reads the job back
-- natively behind the call. The table grows field by field (rehashing as it does):
-- fail.lua, on every NACK, builds its table in one constructor instead (~23k fewer
-- instructions for its 31 fields).
local function read_fields(jk, names)
  local f = redis.call('HMGET', jk, unpack(names))
  if not f[1] and not f[2] then return nil end
  local job = {}
  for i = 1, #names do
    local v = f[i]
    if v then job[names[i]] = v end
  end
  return job
end

-- A job in a reply is field/value pairs where a later pair overrides an earlier one
-- and a false value (a nil reply) deletes the field (JobRecord::from_flat_array).
-- A job table as such pairs:
local function flat_job(job)
  local out = {}
  for k, v in pairs(job) do
    out[#out + 1] = k
    out[#out + 1] = tostring(v)
  end
  return out
end

-- The approximate cap of every queue's event stream; 0: no events at all. The
-- broker rewrites these two lines when it builds the library (--events, --events-max-len;
-- broker/store/lua_scripts.cpp).
local EVENTS_MAXLEN = 10000
local EVENTS_MAXLEN_S = '10000'  -- the same as XADD's argument: not formatted per call

-- One XADD to the queue's capped event stream, from values the script holds.
-- extra: more field/value pairs, or (a transition's one pair, no table built
-- for it) nil and the pair as key, value.
local function emit(events_key, event_type, job, extra, key, value)
  if EVENTS_MAXLEN == 0 then return end
  local id, job_type, queue = job.id or '', job.type or '', job.queue or ''
  local attempt = type(job.attempt) == 'string' and job.attempt or tostring(job.attempt or '0')
  -- The job's tenant rides in the entry: a tenant-pinned reader filters without reading the job.
  local tenant = job.tenant and job.tenant ~= '' and job.tenant
  if key and not extra then
    -- A transition's one pair (job.started, job.completed): the entry in one
    -- literal call, no table built, no unpack (~4.5k instructions a call).
    if tenant then
      redis.call('XADD', events_key, 'MAXLEN', '~', EVENTS_MAXLEN_S, '*', 'type', event_type, 'job_id', id,
                 'job_type', job_type, 'queue', queue, 'attempt', attempt, 'tenant', tenant, key, value)
    else
      redis.call('XADD', events_key, 'MAXLEN', '~', EVENTS_MAXLEN_S, '*', 'type', event_type, 'job_id', id,
                 'job_type', job_type, 'queue', queue, 'attempt', attempt, key, value)
    end
    return
  end
  local fields = {'type', event_type, 'job_id', id, 'job_type', job_type, 'queue', queue, 'attempt', attempt}
  local n = 10
  if tenant then fields[11], fields[12] = 'tenant', tenant; n = 12 end
  if extra then
    for i = 1, #extra do fields[n + i] = extra[i] end
  end
  redis.call('XADD', events_key, 'MAXLEN', '~', EVENTS_MAXLEN_S, '*', unpack(fields))
end

-- HSET of values[first..last] (field, value, ...) into `key` in slices: unpack has a
-- bound (about 8,000 values), which an unbounded list must never reach in one call.
local function hset_slices(key, values, first, last)
  local slice = {}
  for i = first, last do
    slice[#slice + 1] = values[i]
    if #slice >= 400 then
      redis.call('HSET', key, unpack(slice))
      slice = {}
    end
  end
  if #slice > 0 then redis.call('HSET', key, unpack(slice)) end
end

-- The worker's held set (keys.hpp held) no longer lists a job it finished or gave
-- up: the holder is the job's worker_id, read from the job (held prefix + it).
-- Paths that skip this (cancel, a gang's release) leave an entry that the next read
-- of the set drops (WorkerStore verifies every entry against its job).
local function release_holder(held_prefix, job)
  if job.worker_id and job.worker_id ~= '' then redis.call('SREM', held_prefix .. job.worker_id, job.id) end
end

local function is_terminal(state)
  return state == 'completed' or state == 'cancelled' or state == 'discarded'
end

-- A ready-set score: band * SCORE_BAND + seq, lower served first. The rule
-- and its bounds are broker/store/priority_score.hpp's pack_score / unpack_score:
-- the loader (lua_scripts.cpp) refuses a library whose two constants differ.
local SCORE_BAND = 1099511627776  -- 2^40: room for the FIFO sequence below a band
local SCORE_BAND_S = '1099511627776'  -- the same as text (priority_score.hpp score_band_arg): claim compares it unparsed
local SCORE_BANDS = 8192          -- bands 0 .. 8191: every score below 2^53, exact as a double

local function score_pack(band, seq)
  if band < 0 or band >= SCORE_BANDS or band ~= math.floor(band) then
    error('score band ' .. string.format('%.17g', band) .. ' is outside 0 .. ' .. (SCORE_BANDS - 1))
  end
  if seq < 0 or seq >= SCORE_BAND or seq ~= math.floor(seq) then
    error('score sequence ' .. string.format('%.17g', seq) .. ' is outside 0 .. 2^40 - 1')
  end
  return band * SCORE_BAND + seq
end

-- The band and the sequence of a score.
local function score_unpack(score)
  if not (score >= 0 and score < SCORE_BANDS * SCORE_BAND) or score ~= math.floor(score) then
    error('score ' .. string.format('%.17g', score) .. ' is outside the bands (0 .. 2^53 - 1, integer)')
  end
  local band = math.floor(score / SCORE_BAND)
  return band, score - band * SCORE_BAND
end

-- The score of FIFO number `seq` in the band that starts at `base` (a job's
-- rank_base or order_base, a band's first score).
local function score_at(base, seq)
  local band, rest = score_unpack(base)
  if rest ~= 0 then error('score base ' .. string.format('%.17g', base) .. ' is not the start of a band') end
  return score_pack(band, seq)
end

-- A job reached a terminal state (completed, discarded, cancelled): it joins
-- the finished index of that state (keys.hpp finished_prefix: id -> finished at ms),
-- read by the admin job listing and trimmed to the queue's retention by the broker.
local function job_finished(finished_prefix, job, state, now, now_s)
  redis.call('ZADD', finished_prefix .. state, now_s or int_s(now), job.id)  -- the caller's text, when it has it
end

-- The per-minute rollup of the stats history (ojs-admin-api.md §10.2): field
-- m<minute since the epoch>:<what> of the queue's stats hash, what = processed | failed |
-- dispatched (a claim started the job: the scheduling stats, a weighted pool's order);
-- StatsHistoryStore::trim drops the fields older than a day.
local function count_minute(stats_key, what, now)
  redis.call('HINCRBY', stats_key, 'm' .. int_s(math.floor(now / 60000)) .. ':' .. what, '1')  -- text: not formatted
end

-- The queue's class-head index (keys.hpp class_heads): class id -> score of
-- the first job of its ready set, absent when the set is empty. Claim reads the heads
-- of all eligible classes in one ZMSCORE instead of one read per class, so every
-- write to a ready set goes through these helpers.
local function ready_add(heads, ready_key, class, score, id)
  score = int_s(score)  -- an integer below 2^53 (score_pack): '%d' once, not '%.17g' per ZADD
  redis.call('ZADD', ready_key, score, id)
  redis.call('ZADD', heads, 'LT', score, class)  -- a new head only when it sorts first
end

-- A class's entry rewritten from its ready set; returns its head as {id, score} or nil.
local function head_refresh(heads, ready_key, class)
  local h = redis.call('ZRANGE', ready_key, '0', '0', 'WITHSCORES')
  if h[1] then
    redis.call('ZADD', heads, h[2], class)
    return h
  end
  redis.call('ZREM', heads, class)
  return nil
end

local function ready_remove(heads, ready_key, class, id)
  if redis.call('ZREM', ready_key, id) == 1 then head_refresh(heads, ready_key, class) end
end

-- The classes hash (keys.hpp classes) holds each requirement class's
-- canonical JSON under its id, and under '#' .. id the number of stored jobs in the
-- class (any state, until the job is deleted): the class goes when that number
-- reaches 0, so classes left behind by PATCH or by finished jobs purged do not pile
-- up in the list every FETCH and estimate reads. A class stored before the count
-- existed is marked untracked (a count no decrement reaches) and kept, as before.
local CLASS_UNTRACKED = 4503599627370496  -- 2^52

-- A job enters `class` (PUSH, a workflow step stored, PATCH to a new class).
-- One call for a class that exists (the PUSH path).
local function class_enter(classes, classes_ver, class, class_json)
  if redis.call('HINCRBY', classes, '#' .. class, 1) ~= 1 then return end
  if redis.call('HSETNX', classes, class, class_json) == 1 then
    redis.call('INCR', classes_ver)  -- a new class: the brokers' class caches read it
  else
    redis.call('HSET', classes, '#' .. class, CLASS_UNTRACKED)  -- stored before the count: kept
  end
end

-- A job leaves `class` for good (its hash deleted, or PATCHed to another class).
local function class_leave(classes, classes_ver, class)
  if not class or class == '' then return end
  local n = redis.call('HINCRBY', classes, '#' .. class, -1)
  if n == 0 then
    redis.call('HDEL', classes, class, '#' .. class)
    redis.call('INCR', classes_ver)
  elseif n < 0 then
    redis.call('HSET', classes, '#' .. class, CLASS_UNTRACKED)  -- stored before the count: kept
  end
end

-- Whether a field of the classes hash is a class (not its job count).
local function is_class_field(field) return field:byte(1) ~= 35 end  -- 35: '#'

-- ojs-backpressure.md §3: a queue's depth is its non-terminal jobs
-- waiting to run (available + scheduled + retryable + pending): every non-empty ready
-- set (one per class, found through the class heads), the delayed zset and the
-- on-hold set (held jobs: holding one makes no room for more).
local function queue_depth(heads, ready_prefix, delayed, on_hold)
  local depth = redis.call('ZCARD', delayed) + redis.call('ZCARD', on_hold)
  for _, class in ipairs(redis.call('ZRANGE', heads, '0', '-1')) do
    depth = depth + redis.call('ZCARD', ready_prefix .. class)
  end
  return depth
end

-- Whether `adding` more jobs fit under the queue's max_depth (config
-- hash fields max_depth, absent or 0: unbounded, and overflow, absent: reject).
-- Returns nil when they fit, else the depth, the bound and the strategy. A refusal
-- under `reject` is recorded as a backpressure.rejected event (BP-004); a `block`
-- PUSH tries again until its timeout, so its tries record none. b: {max_depth, overflow}
-- when the caller read them with its own config read (push.lua), else read here.
local function over_depth_bound(config, heads, ready_prefix, delayed, on_hold, events, job, adding, b)
  b = b or redis.call('HMGET', config, 'max_depth', 'overflow')
  local bound = tonumber(b[1] or '0')
  if bound <= 0 then return nil end
  local depth = queue_depth(heads, ready_prefix, delayed, on_hold)
  if depth + adding <= bound then return nil end
  local strategy = b[2] or 'reject'
  if strategy == 'reject' then
    emit(events, 'backpressure.rejected', job, {'depth', tostring(depth), 'bound', tostring(bound)})
  end
  return depth, bound, strategy
end

-- Makes a job fetchable: next FIFO sequence, score = rank_base + seq (score_at)
-- (order_base instead of rank_base when the queue policy gave one).
-- r: {seq, heads, ready} (keys; ready: the ready set of job.class)
local function make_available(r, jk, job, now)
  local seq = redis.call('INCR', r.seq)
  job.state, job.enqueued_at = 'available', now
  redis.call('HSET', jk, 'state', 'available', 'enqueued_at', int_s(now))
  if job.next_attempt_at then
    job.next_attempt_at = nil
    redis.call('HDEL', jk, 'next_attempt_at')
  end
  ready_add(r.heads, r.ready, job.class, score_at(tonumber(job.order_base or job.rank_base), seq), job.id)
end

-- Scheduled jobs and due retries become available.
-- q: {delayed, seq, heads, events, job_prefix, ready_prefix}
-- expired(jk, job): called instead of promoting a job already past its
-- expires_at (expiry is checked before promotion: the caller discards it).
-- now_s: now as text, when the caller has it.
local function promote_due(q, now, limit, expired, now_s)
  local due = redis.call('ZRANGEBYSCORE', q.delayed, '-inf', now_s or int_s(now), 'LIMIT', '0', int_s(limit))
  for _, id in ipairs(due) do
    redis.call('ZREM', q.delayed, id)
    local jk = q.job_prefix .. id
    local f = redis.call('HMGET', jk, 'state', 'rank_base', 'class', 'type', 'queue', 'attempt', 'next_attempt_at', 'order_base',
                         'tenant')
    if f[1] == 'scheduled' or f[1] == 'retryable' then
      local job = {id = id, state = f[1], rank_base = f[2], class = f[3], type = f[4], queue = f[5], attempt = f[6],
                   next_attempt_at = f[7] or nil, order_base = f[8] or nil, tenant = f[9] or nil}
      local expires = tonumber(redis.call('HGET', jk, 'expires_at') or '')
      if expires and expires <= now then
        expired(jk, read_job(jk))
      else
        make_available({seq = q.seq, heads = q.heads, ready = q.ready_prefix .. f[3]}, jk, job, now)
        emit(q.events, 'job.available', job, nil)
      end
    end
  end
  return #due
end

-- The reservation deadlines of a starting attempt (claim, and a gang's start in
-- claim_gang): visibility from the request, then the job's, then the broker default,
-- never past the execution timeout (timeout_ms / ext_ml_timeout_seconds), which
-- heartbeats cannot extend. Sets job.visibility_deadline and job.execution_deadline
-- (nil without a timeout); returns the visibility deadline and whether an execution
-- deadline the job held went away (the caller deletes the field).
local function start_deadlines(job, now, request_vis, default_vis)
  local deadline = now + (request_vis or tonumber(job.visibility_timeout_ms or '') or default_vis)
  local timeout = tonumber(job.timeout_ms or '')
  local dropped = false
  if timeout and timeout > 0 then
    job.execution_deadline = now + timeout
    if job.execution_deadline < deadline then deadline = job.execution_deadline end
  elseif job.execution_deadline then
    job.execution_deadline, dropped = nil, true
  end
  job.visibility_deadline = deadline
  return deadline, dropped
end

-- GPU and TPU budget ledger of a queue: charged at claim, released by every transition
-- that ends an attempt (ack, fail, cancel, requeue), inside the same script.
-- Fields: gpus (devices held), gpu_jobs, gpu_mem_mb (GPU memory held, whole MB;
-- the job's charged_gpu_mem_mb), tpu_chips (the job's charged_tpu_chips). l: {ledger, tenant_ledger}. keep_field: the
-- caller deletes BUDGET_FIELDS itself (in the HDEL it sends
-- anyway); returns whether there was a charge.
local BUDGET_FIELDS = {'charged_gpus', 'charged_gpu_mem_mb', 'borrowed_gpus', 'charged_tpu_chips'}  -- the job's charge, as claim writes it
-- An empty list of fields, shared (never written to): a transition that deletes none.
local NO_FIELDS = {}
local function release_budget(l, jk, job, keep_field)
  local charged = text_number(job.charged_gpus or '0')  -- '1' and '0' unparsed
  if charged > 0 then
    local release = int_s(-charged)  -- formatted once
    redis.call('HINCRBY', l.ledger, 'gpus', release)
    redis.call('HINCRBY', l.ledger, 'gpu_jobs', '-1')
    if job.tenant and job.tenant ~= '' then redis.call('HINCRBY', l.tenant_ledger, job.tenant, release) end
  end
  local mem = text_number(job.charged_gpu_mem_mb or '0')
  if mem > 0 then redis.call('HINCRBY', l.ledger, 'gpu_mem_mb', int_s(-mem)) end
  if job.borrowed_gpus then redis.call('HINCRBY', l.ledger, 'borrowed_gpus', int_s(-text_number(job.borrowed_gpus))) end
  if job.charged_tpu_chips then redis.call('HINCRBY', l.ledger, 'tpu_chips', int_s(-text_number(job.charged_tpu_chips))) end
  if not (job.charged_gpus or job.charged_tpu_chips) then return false end
  job.charged_gpus, job.charged_gpu_mem_mb, job.borrowed_gpus, job.charged_tpu_chips = nil, nil, nil, nil
  if not keep_field then redis.call('HDEL', jk, unpack(BUDGET_FIELDS)) end
  return true
end

-- The queue budget, read once per call (a claim may test many classes) and
-- kept current by budget_charge as the same call charges jobs.
-- b: {config, ledger, limits = {max_total_gpus, max_concurrent_gpu_jobs,
-- max_total_gpu_memory_mb, cohort_max_gpus, max_total_tpu_chips} when the caller already read them from config}.
-- A queue in a cohort is held to the share the cohort controller gave it
-- (cohort_max_gpus, which may be above max_total_gpus: borrowing); the C++ read is
-- job_store.cpp budget_from.
-- mem: the GPU memory (MB) the job would hold (0: none declared or known); tpu: the
-- TPU chips it would hold (nil or 0: none). A TPU job is held to max_total_tpu_chips
-- only, as QueueBudget::blocking holds it (a job needs GPUs or TPU chips, not both).
local function budget_block(b, gpus, mem, tpu)
  if gpus <= 0 and not (tpu and tpu > 0) then return nil end
  if per_call.budget == nil then
    local cfg = b.limits or redis.call('HMGET', b.config, 'max_total_gpus', 'max_concurrent_gpu_jobs', 'max_total_gpu_memory_mb',
                                       'cohort_max_gpus', 'max_total_tpu_chips')
    local nominal, cohort = tonumber(cfg[1] or ''), tonumber(cfg[4] or '')
    local max_gpus, max_jobs, max_mem, max_tpu = cohort or nominal, tonumber(cfg[2] or ''), tonumber(cfg[3] or ''), tonumber(cfg[5] or '')
    if max_gpus or max_jobs or max_mem or max_tpu then
      local led = redis.call('HMGET', b.ledger, 'gpus', 'gpu_jobs', 'gpu_mem_mb', 'tpu_chips')
      per_call.budget = {used = tonumber(led[1] or '0'), jobs = tonumber(led[2] or '0'), mem = tonumber(led[3] or '0'),
                         tpu = tonumber(led[4] or '0'), max_gpus = max_gpus, max_jobs = max_jobs, max_mem = max_mem,
                         max_tpu = max_tpu, nominal = cohort and nominal}  -- a cohort member's GPUs above it are borrowed
    else
      per_call.budget = false  -- no budget configured: nothing to compare, no ledger read, nothing kept
    end
  end
  local s = per_call.budget
  if not s then return nil end
  if tpu and tpu > 0 then
    if s.max_tpu and s.tpu + tpu > s.max_tpu then return {s.tpu, s.max_tpu, 'max_total_tpu_chips'} end
    if gpus <= 0 then return nil end
  end
  if s.max_gpus and s.used + gpus > s.max_gpus then return {s.used, s.max_gpus, 'max_total_gpus'} end
  if s.max_jobs and s.jobs + 1 > s.max_jobs then return {s.jobs, s.max_jobs, 'max_concurrent_gpu_jobs'} end
  if s.max_mem and s.mem + (mem or 0) > s.max_mem then return {s.mem, s.max_mem, 'max_total_gpu_memory_gb'} end
  return nil
end

-- The GPUs of a charge of `gpus` above the queue's nominal budget (a cohort member
-- borrowing from the cohort's idle share), counted in the ledger's borrowed_gpus; 0
-- outside a cohort. Reads the budget budget_block read (per_call.budget), before the
-- charge is added to it.
local function budget_borrow(b, gpus)
  local s = per_call.budget
  if not (s and s.nominal) then return 0 end
  local borrowed = math.min(gpus, math.max(0, s.used + gpus - s.nominal))
  if borrowed > 0 then redis.call('HINCRBY', b.ledger, 'borrowed_gpus', int_s(borrowed)) end
  return borrowed
end

-- gpus_s: the same count as text (no number formatting inside redis.call); mem: MB.
-- Returns the GPUs of this charge that are borrowed (budget_borrow).
local function budget_charge(b, gpus, gpus_s, mem)
  redis.call('HINCRBY', b.ledger, 'gpus', gpus_s or int_s(gpus))
  redis.call('HINCRBY', b.ledger, 'gpu_jobs', '1')
  if mem and mem > 0 then redis.call('HINCRBY', b.ledger, 'gpu_mem_mb', int_s(mem)) end
  local borrowed = budget_borrow(b, gpus)
  local s = per_call.budget
  if s then
    s.used = s.used + gpus
    s.jobs = s.jobs + 1
    s.mem = s.mem + (mem or 0)
  end
  return borrowed
end

-- A TPU job's chips (tpu_s: the same as text) charged to the ledger, and to the
-- budget this call read.
local function budget_charge_tpu(b, tpu, tpu_s)
  redis.call('HINCRBY', b.ledger, 'tpu_chips', tpu_s)
  local s = per_call.budget
  if s then s.tpu = s.tpu + tpu end
end

-- Per-tenant GPU quotas of a queue: `tenant-quotas` maps tenant -> max GPUs ('*' =
-- any tenant without an entry), `tenant-ledger` tenant -> GPUs charged. A job's
-- tenant is its `tenant` field (written at PUSH); release_budget gives them back.
-- t: {tenant_quotas, tenant_ledger, job_prefix}
local function tenant_block(t, tenant, gpus)
  if gpus <= 0 or not tenant or tenant == '' then return nil end
  local q = redis.call('HMGET', t.tenant_quotas, tenant, '*')
  local limit = tonumber(q[1] or q[2] or '')
  if not limit then return nil end
  local used = tonumber(redis.call('HGET', t.tenant_ledger, tenant) or '0')
  if used + gpus > limit then return {used, limit, 'tenant_quota:' .. tenant} end
  return nil
end

local function has_tenant_quotas(t)  -- read once per call
  if per_call.tenant_quotas == nil then
    per_call.tenant_quotas = redis.call('EXISTS', t.tenant_quotas) == 1
  end
  return per_call.tenant_quotas
end

-- Queue rate limit (ojs-rate-limiting.md §7.2), the one Lua reading of it:
-- concurrency counts the queue's active jobs (no counter to drift); the rate is a
-- sliding window log of start times. Given the config's rate_concurrency,
-- rate_limit_starts and rate_period_ms (numbers or nil), returns the starts still
-- allowed now (nil = unlimited) and which limit is the tighter ('concurrency' | 'rate').
local function rate_room(concurrency, starts, period, active_key, window_key, now)
  local room, why = nil, ''
  if concurrency then room, why = concurrency - redis.call('ZCARD', active_key), 'concurrency' end
  if starts and period then
    redis.call('ZREMRANGEBYSCORE', window_key, '-inf', now - period)
    local r = starts - redis.call('ZCARD', window_key)
    if not room or r < room then room, why = r, 'rate' end
  end
  return room, why
end

-- One start in the rate window (`member` unique per attempt: id:attempt).
local function rate_record(window_key, period, now_s, member)
  redis.call('ZADD', window_key, now_s, member)
  redis.call('PEXPIRE', window_key, period)
end

-- An expired job (expires_at passed before delivery) is discarded,
-- never delivered: state, the queue's discarded count, the finished index and job.discarded.
local function discard_expired(jk, job, stats_key, events_key, finished_prefix, now)
  job.state, job.discarded_at = 'discarded', now  -- no completed_at: it never ran (level-2 ttl case)
  job.error = cjson.encode({code = 'expired', type = 'expired', retryable = false,
                            message = 'job expired (expires_at passed) before it was delivered'})
  redis.call('HSET', jk, 'state', 'discarded', 'discarded_at', now, 'error', job.error)
  redis.call('HINCRBY', stats_key, 'discarded', 1)
  job_finished(finished_prefix, job, 'discarded', now)
  emit(events_key, 'job.discarded', job, {'reason', 'expired'})
end
