-- FETCH under the queue policy `fair` only (every other claim is decided by the broker,
-- scheduling/claim_decision.cpp, and committed by claim.lua). Still to move: the fair
-- order (fair_head, fair_rank) and the usage fold into the broker's decision.
-- Claims up to `count` jobs of the eligible requirement classes.
-- A job past its expires_at when it would be delivered is discarded instead
-- (OJS core; at most 100 per call) and the next best is taken.
-- KEYS (21 + 11n): 1 classes version, 2 paused, 3 delayed, 4 active, 5 seq, 6 events,
--   7 config, 8 ledger, 9 tenant quotas, 10 tenant ledger, 11 job prefix, 12 ready prefix,
--   13 stats, 14 rate window (zset: claim times in the rate period), 15 class heads,
--   16 this worker's held set in the queue (keys.hpp held),
--   17 finished prefix (keys.hpp finished_prefix), 18-21 [usage] the queue's usage hash, usage
--   journal, totals and hourly rollup (a `fair` claim folds the journal first: _lib_accounting.lua)
--   ([fairshare] config 7 also gives policy / fair_tenants / usage_half_life_ms; usage 18 the shares),
--   n = 0 or 1: 22-32 the workflow keys (_lib_workflows.lua: an expired step ends its workflow's
--   step). [hotpath] Sent only when needed (a key costs a call ~1.1k instructions): without
--   them, a claim stops before an expired workflow step, leaves it in place and says so
--   (the reply's 5th element), and ClaimStore::claim calls again with them.
--   The ready set of a class is the ready prefix + the class id, a member of the
--   declared class-heads index (keys.hpp).
-- ARGV: 1 worker_id, 2 request_visibility_ms ('' = none), 3 default_visibility_ms, 4 count,
--       5 classes_version, 6 score band (2^40, priority_score.hpp; must equal _lib.lua's), 7 the highest bonus
--       among the eligible classes, 8 their number, 9 the eligible classes, one line each
--       (each line starts with a newline): class id TAB bonus (soft score) TAB hold cutoff (skip a head
--       enqueued after this ms; 0 = none) TAB gpus the class needs (charged to the queue
--       budget) TAB assigned devices JSON ('' = none) TAB GPU memory (MB) the job would hold
--       (charged to a GPU-memory budget) [TAB [backfill] the reservation start (ms) its jobs
--       must end by, when the class would use GPUs held for one],
--       10 '1' = list each claimed job in the held set ('': the worker has no load to keep)
-- Reply: {'ok', {job fields...}, {budget-blocked: class, in_use, limit, kind, ...},
--         rate limit that cut this claim short ('' = none | concurrency | rate),
--         '1' = stopped before an expired workflow step: call again with the workflow keys ('' = no)}
--        | {'paused'} | {'stale', current version}
local worker, request_vis, default_vis, count, version =
  ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
if ARGV[6] ~= SCORE_BAND_S and tonumber(ARGV[6]) ~= SCORE_BAND then error('the broker scores with band ' .. ARGV[6] .. ', _lib.lua with ' .. SCORE_BAND) end
local state = redis.call('MGET', KEYS[2], KEYS[1])  -- [hotpath] paused flag and classes version in one read
if state[1] then return {'paused'} end
local current = state[2] or '0'
if current ~= version then return {'stale', current} end
local q = {delayed = KEYS[3], seq = KEYS[5], heads = KEYS[15], events = KEYS[6], job_prefix = KEYS[11], ready_prefix = KEYS[12]}
local b = {config = KEYS[7], ledger = KEYS[8]}
local now = now_ms()
local t = {tenant_quotas = KEYS[9], tenant_ledger = KEYS[10], job_prefix = KEYS[11], usage = KEYS[18], now = now}
-- [hotpath] numbers handed to redis.call are formatted with snprintf('%.17g') on
-- every call: constant and repeated arguments go as strings, each formatted once.
local now_s = int_s(now)
-- A job past its expires_at when it is promoted or would be delivered is discarded, as
-- any discard: a workflow's ends its step, which needs the workflow keys (KEYS 22-32);
-- without them the job is left for the call with them (`more`).
local more = ''  -- '1': stopped before an expired workflow step (KEYS 22-32 not sent)
local function lacks_workflow_keys(job) return job.workflow_id and #KEYS < 32 end
local function discard_expired_job(jk, job)
  discard_expired(jk, job, KEYS[13], KEYS[6], KEYS[17], now)
  if job.workflow_id then workflow_job_ended(workflow_keys(KEYS, 22, KEYS[6]), job, 'failed', now) end  -- [workflows]
end
promote_due(q, now, 1000, function(jk, job)
  if lacks_workflow_keys(job) then
    redis.call('ZADD', KEYS[3], now_s, job.id)  -- due still
    more = '1'
    return
  end
  discard_expired_job(jk, job)
end, now_s)

-- [spec #17] Queue rate limit (_lib.lua rate_room): jobs over the limit stay available.
local rate_limited = ''
local rl = redis.call('HMGET', KEYS[7], 'rate_concurrency', 'rate_limit_starts', 'rate_period_ms',
                     'max_total_gpus', 'max_concurrent_gpu_jobs', 'policy', 'tenant_quotas',
                     'max_total_gpu_memory_mb', 'usage_half_life_ms')  -- [hotpath] budget limits, policy, quotas in one read
b.limits = {rl[4], rl[5], rl[8]}
-- queue_config.lua writes the config's tenant_quotas field with the tenant quota hash:
-- without it there is no quota, and has_tenant_quotas needs no EXISTS of its own.
per_call.tenant_quotas = rl[7] ~= false
local rate_starts, rate_period = tonumber(rl[2] or ''), tonumber(rl[3] or '')
local room, why = rate_room(tonumber(rl[1] or ''), rate_starts, rate_period, KEYS[4], KEYS[14], now)
if room and room < count then count = math.max(room, 0); rate_limited = why end

-- [heads] The eligible classes, one line each in ARGV[8]. A class's line is parsed
-- only when the claim looks at it: classes are visited in the order of their heads
-- (the class-head index), so a claim usually reads one entry of the index and one
-- line of ARGV, whatever the number of classes.
local packed, max_bonus, n_eligible = ARGV[9], tonumber(ARGV[7]), tonumber(ARGV[8])
local record = ARGV[10] == '1'
local info = {}
local function class_info(id)
  local c = info[id]
  if c == nil then
    c = false
    local at = string.find(packed, '\n' .. id .. '\t', 1, true)
    if at then
      local bonus, hold, gpus, devices, mem, backfill =
        string.match(packed, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t\n]*)\t([^\t\n]*)\t?([^\n]*)', at + #id + 2)
      c = {id = id, bonus = tonumber(bonus), hold = text_number(hold), gpus = text_number(gpus), devices = devices,
           mem = text_number(mem) or 0, ready = KEYS[12] .. id, backfill = tonumber(backfill)}
    end
    info[id] = c
  end
  return c
end

-- The heads of the index from `pos` on (0-based), at most `n`, as {class, score, ...} in
-- score order. With few eligible classes their entries are read by name instead
-- (ZMSCORE), so a worker that can run 1 class of 100 does not walk the other 99; with
-- one, its ready set is read directly (the read its claim needs anyway).
local direct = nil
local function heads_from(pos, n)
  if n_eligible > 4 then return redis.call('ZRANGE', KEYS[15], int_s(pos), int_s(pos + n - 1), 'WITHSCORES') end
  if not direct and n_eligible == 1 then
    local c = class_info(string.match(packed, '^\n([^\t]*)\t'))
    if c then c.head = redis.call('ZRANGE', c.ready, '0', '1', 'WITHSCORES') end
    direct = (c and c.head[1]) and {c.id, c.head[2]} or {}
  end
  if not direct then
    local ids = {}
    for id in string.gmatch(packed, '\n([^\t]*)\t') do ids[#ids + 1] = id end
    direct = {}
    if #ids > 0 then
      local scores = redis.call('ZMSCORE', KEYS[15], unpack(ids))
      local order = {}
      for i = 1, #ids do
        if scores[i] then order[#order + 1] = {ids[i], scores[i], tonumber(scores[i])} end
      end
      table.sort(order, function(x, y) return x[3] < y[3] end)
      for _, e in ipairs(order) do direct[#direct + 1] = e[1]; direct[#direct + 1] = e[2] end
    end
  end
  local out = {}
  for i = 2 * pos + 1, math.min(#direct, 2 * (pos + n)) do out[#out + 1] = direct[i] end
  return out
end

-- A class's first two jobs {id, score, next id, next score}, read only for a class the
-- claim looks at closely. An entry of the index whose ready set is empty is repaired.
local function head_of(c)
  if not c.head then
    c.head = redis.call('ZRANGE', c.ready, '0', '1', 'WITHSCORES')
    if not c.head[1] then redis.call('ZREM', KEYS[15], c.id) end
  end
  return c.head
end

-- [fairshare] Queue policy `fair`: each ready set offers its best job by the queue's
-- fair order ([fairorder] tenant: the lowest share, its highest class; class: the
-- highest class, its lowest share), and the classes compare by the same keys
-- (_lib_fairshare.lua fair_head, fair_rank).
local fair = nil
if rl[6] == 'fair' then
  fair, t.half_life = fair_config(KEYS[7]), usage_half_life(rl[9])
  -- [usage] The ends not folded yet, so the shares compare what was used up to now.
  -- Bounded: the maintenance pass folds about once a second, so more than this waits
  -- only after an outage, and is folded by later calls.
  usage_fold({journal = KEYS[19], usage = KEYS[18], totals = KEYS[20], hours = KEYS[21], config = KEYS[7]}, 2000)
end
local started_us = int_s(usage_clock_us())  -- [usage] the start of each claimed attempt, for its resource-seconds

local claimed, blocked = {}, {}
-- The call's state for start_attempt (_lib_claim.lua), and [usage] the hook that
-- adds a claimed job's amounts to its tenant's held use.
local starting = {worker = worker, now = now, now_s = now_s, started_us = started_us, request_vis = request_vis,
                  default_vis = default_vis, record = record, rate_starts = rate_starts, rate_period = rate_period,
                  budget = b, tenant_ledger = KEYS[10], active = KEYS[4], held = KEYS[16], events = KEYS[6],
                  rate_window = KEYS[14]}
local fair_on_set = nil
if fair then fair_on_set = function(job, set) fair_started(fair, t, job, usage_amounts(job), set) end end
-- A class kept from this claim, with its reason (the reply's budget-blocked list).
local function report_blocked(c, in_use, limit, kind)
  blocked[#blocked + 1] = c.id; blocked[#blocked + 1] = in_use; blocked[#blocked + 1] = limit; blocked[#blocked + 1] = kind
  c.done = true
end

-- The best job for this worker: the lowest (band, -bonus, score) over the eligible
-- classes' heads; [fairshare] under `fair` the order's keys (fair_rank), -bonus, seq. Returns the class
-- and the job id (nil: the class's head, read when taken). A class refused here
-- (over budget or quota, held for a warm worker, empty) is `done` for this claim.
local function choose()
  local best, best_id, b1, b2, b3, b4 = nil, nil, nil, nil, nil, nil
  local stop = nil  -- [fairband] under `fair`: the score past which no head beats the best (fair_rank)
  local pos, page = 0, 1
  while true do
    local entries = heads_from(pos, page)
    for j = 1, #entries, 2 do
      local score = tonumber(entries[j + 1])
      local band = score_unpack(score)
      -- Heads come in score order: past the best's band nothing can beat it
      -- ([fairband] under `fair`, past its priority class).
      if best and (fair and score >= stop or not fair and band > b1) then return best, best_id end
      local c = class_info(entries[j])
      if c and not c.done then
        local head, over = {nil, score}, budget_block(b, c.gpus, c.mem)  -- the id is read only if this class is taken
        if not over then
          if fair then head, over = fair_head(fair, t, c.ready, c.gpus, c.head)  -- [fairshare]
          elseif c.gpus > 0 and has_tenant_quotas(t) then head, over = within_tenant_quota(t, c.ready, head, c.gpus) end
        end
        if over then
          -- Over budget: the job stays available (never rejected) and the reason is reported.
          report_blocked(c, over[1], over[2], over[3])
        elseif not head then
          c.done = true
        else
          if c.hold > 0 then
            local id = head[1] or head_of(c)[1]
            local enq = id and tonumber(redis.call('HGET', KEYS[11] .. id, 'enqueued_at') or '0') or 0
            if not id or enq > c.hold then c.done = true end  -- enqueued too recently: kept for a warm worker a little longer
          end
          -- [backfill] On GPUs held for a reservation, only a job declared to end before its start (_lib_backfill.lua).
          if not c.done and c.backfill then
            local id, sc, declared = backfill_pick(t, c.ready, c.backfill, now, c.gpus)
            if id then
              band = score_unpack(tonumber(sc))
              head = {id, sc, head[3], head[4], fair and fair_band_of(fair, band)}
            else
              report_blocked(c, declared, c.backfill, 'backfill')
            end
          end
          if not c.done then
            local k1, k2, k3, k4, fair_stop = band, 0, -c.bonus, tonumber(head[2]), nil
            if fair then k1, k2, k4, fair_stop = fair_rank(fair, head) end  -- [fairorder] the order's (share, class) keys
            if not best or k1 < b1 or (k1 == b1 and (k2 < b2 or (k2 == b2 and (k3 < b3 or (k3 == b3 and k4 < b4))))) then
              best, best_id, b1, b2, b3, b4 = c, head[1], k1, k2, k3, k4
              if fair then stop = fair_stop end
              -- Nothing later in the index sorts before it, and no class offers more bonus.
              if not fair and c.bonus >= max_bonus and not c.backfill then return best, best_id end
            end
          end
        end
      end
    end
    if #entries < 2 * page then return best, best_id end
    pos, page = pos + page, page * 4
  end
end

-- The chosen job: its id (best_id, else its class's head, read now); nil when the
-- class turned out empty (it is done).
local function peek(c, best_id)
  if best_id then return best_id end
  local id = head_of(c)[1]
  if not id then c.done, c.head, direct = true, nil, nil end
  return id
end

-- The chosen job leaves its class's ready set, and the class's entry in the index
-- follows (for a head, from the next job read with it: ready_remove's re-read is
-- spared).
local function take(c, best_id, id)
  if best_id then
    ready_remove(KEYS[15], c.ready, c.id, best_id)
  else
    local h = head_of(c)
    redis.call('ZREM', c.ready, id)
    if h[3] then redis.call('ZADD', KEYS[15], h[4], c.id) else redis.call('ZREM', KEYS[15], c.id) end
  end
  c.head, direct = nil, nil  -- re-read: this class's head moved
end

-- Up to `count` jobs, best first. A job past its expires_at is discarded instead (at
-- most 100 per call), as any discard: its workflow step ends too.
local expired_left = 100
while #claimed < count do
  local c, best_id = choose()
  if not c then break end
  local id = peek(c, best_id)
  if id then
    local jk = KEYS[11] .. id
    local job, flat = read_job(jk)
    if not job then job, flat = {id = id}, {'id', id} end
    local expires = tonumber(job.expires_at or '')
    if expires and expires <= now and lacks_workflow_keys(job) then more = '1'; break end
    take(c, best_id, id)
    if expires and expires <= now then
      discard_expired_job(jk, job)
      expired_left = expired_left - 1
      if expired_left == 0 then break end
    else
      -- The attempt starts on this worker (_lib_claim.lua), [fairshare] with its tenant's held use.
      claimed[#claimed + 1] = start_attempt(starting, jk, id, job, flat, c.gpus, c.devices, c.mem, fair_on_set)
    end
  end
end
return {'ok', claimed, blocked, rate_limited, more}
