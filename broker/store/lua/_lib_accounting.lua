-- Resource accounting (docs/operations.md#resource-accounting).
-- Every end of a running attempt (ack, fail: retry, requeue, reclaim, discard;
-- cancel) charges what the job held from its start to now, in resource-microseconds,
-- exactly once and in the same step as the transition: the job hash gets its record
-- (usage_<resource>_us, summed over its attempts) and the queue's usage journal
-- (keys.hpp usage_journal) one line (an ACK also journals its completion there, in
-- the same RPUSH: settle.lua counts it). The journal is folded, oldest line first, into
--   the queue's totals (keys.hpp usage_totals: tenant TAB resource -> us, never
--   decayed; /metrics ojs_resource_seconds_total), its per-hour rollup (keys.hpp
--   usage_hours: hour TAB tenant TAB type TAB worker TAB resource -> us, trimmed to
--   --usage-retention-hours by the broker), and the decayed usage that the `fair`
--   policy weighs (keys.hpp usage: see below)
-- by usage_fold: before the reports read the totals (the usage report, the
-- metrics; settle.lua) and by the broker's maintenance pass, about once a
-- second (the fair order reads the decayed use without folding: see the usage
-- hash below). Why a journal: the
-- fold of a line costs a few thousand instructions where updating the five hashes
-- at each end cost ~250k (bench/lua-callgrind.sh), and lines of the same tenant and
-- hour fold into one write. Folding in order gives the same numbers as updating in
-- place: each line carries its end time, and decay is applied line by line.
-- Resources, in this order everywhere: gpu (GPUs charged), cpu (the job's
-- ext_ml cpu_cores, 1 when none), memory_mb (host memory declared, MB), gpu_memory_mb
-- (GPU memory charged, MB). Amount x microseconds: exact integers.
local USAGE_RESOURCES = {'gpu', 'cpu', 'memory_mb', 'gpu_memory_mb'}
-- The job's record of each (usage_<resource>_us), named once: no name built per call.
local USAGE_RECORD_FIELDS = {'usage_gpu_us', 'usage_cpu_us', 'usage_memory_mb_us', 'usage_gpu_memory_mb_us'}

-- What the job holds while it runs, one amount per resource, as the job's fields
-- hold them (read before release_budget, which clears the charge): four values,
-- no table. An amount that is absent, or not a number, is its resource's default.
local USAGE_AMOUNT_DEFAULTS = {0, 1, 0, 0}  -- a job declaring no CPU counts one core
local function usage_amount_texts(job)
  return job.charged_gpus or '0', job.cpus or '1', job.mem_mb or '0', job.charged_gpu_mem_mb or '0'
end

-- The four amounts (texts, as usage_amount_texts gives them or a journal line holds
-- them) as numbers, in one table ('0' and '1' unparsed: text_number).
local function usage_amount_numbers(a1, a2, a3, a4)
  local d = USAGE_AMOUNT_DEFAULTS
  return {text_number(a1) or d[1], text_number(a2) or d[2], text_number(a3) or d[3], text_number(a4) or d[4]}
end

local function usage_amounts(job)
  return usage_amount_numbers(usage_amount_texts(job))
end

-- The usage hash (keys.hpp usage) of a queue, per tenant ('*': the whole queue;
-- '': jobs without a tenant; tenant names never hold '*' or '|'):
--   <tenant>      'at u1 u2 u3 u4': resource-seconds used by ended attempts,
--                 decayed to `at` (ms) with the queue's half-life;
--   <tenant>|run  'n1 n2 n3 n4 at r1 r2': what the tenant's running jobs hold now
--                 (n: a claim under `fair` adds a job's amounts, its end takes them
--                 away; the job's field usage_run says they were added), and the use
--                 of the resources the order weighs (r: GPUs, CPUs; fair_order.cpp) not
--                 yet folded into <tenant>, in resource-microseconds decayed to `at`
--                 (ms; usage_run_at): a running attempt's use counts as it accrues,
--                 and an ended one's stays here, decaying, until the fold moves it.
-- A missing or short value reads as zeros. So the two values read at any time,
-- folded or not, give the tenant's use and holding now: the fair order reads them
-- without folding (the maintenance pass folds about once a second).
local USAGE_HALF_LIFE_MS = 3600000  -- the default of tenant_fairness.half_life_seconds (an hour)
local LN2 = 0.69314718055994531

-- A held value ('n1 n2 n3 n4 at r1 r2', every start and end of a fair
-- job reads one) in one match, not a token at a time; other shapes token by token.
local function usage_numbers(raw, n)
  if raw and n == 7 then
    local a, b, c, d, e, f, g = string.match(raw, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
    if a then
      return {text_number(a) or 0, text_number(b) or 0, text_number(c) or 0, text_number(d) or 0, tonumber(e) or 0,
              text_number(f) or 0, text_number(g) or 0}
    end
  end
  local v = {}
  if raw then for x in string.gmatch(raw, '%S+') do v[#v + 1] = tonumber(x) or 0 end end
  for i = #v + 1, n do v[i] = 0 end
  return v
end

-- Decayed use `v` ('at u1..u4' numbers) brought to `now`: halved every half_life_ms
-- (0: nothing is remembered).
local function usage_decayed(v, now, half_life_ms)
  if half_life_ms <= 0 then
    for i = 2, 5 do v[i] = 0 end
  elseif now > v[1] then
    local f = 2 ^ (-(now - v[1]) / half_life_ms)
    for i = 2, 5 do v[i] = v[i] * f end
  end
  v[1] = math.max(v[1], now)
  return v
end

local function usage_text(v)
  local out = {}
  for i = 1, #v do out[i] = v[i] == math.floor(v[i]) and math.abs(v[i]) < 1e15 and int_s(v[i]) or string.format('%.17g', v[i]) end
  return table.concat(out, ' ')
end

-- The queue config's half-life (field usage_half_life_ms, written from
-- tenant_fairness.half_life_seconds), given its value as read.
local function usage_half_life(raw)
  return tonumber(raw or '') or USAGE_HALF_LIFE_MS
end

-- A <tenant>|run value `r` (its 7 numbers) brought to `now`: over the time since
-- `at` the amounts held (n, constant in between: every start and end writes the
-- value) add n x (half-life / ln 2) x (1 - 2^(-elapsed / half-life)) to the use so
-- far, which decays meanwhile. One value per tenant whatever the number of its
-- attempts; the same integral as the fold's for an ended attempt, so the use moves
-- from here to the decayed use when its end is folded (usage_fold), counted once. Written
-- in whole resource-microseconds (usage_run_text: integers are cheap to write and
-- read back, and every claim does), never above n x half-life / ln 2, so nothing
-- grows without bound; under a changed half-life it goes on from its last write
-- with the new one. A value from before it was kept (`at` 0) starts from `now`.
local function usage_run_at(r, now, half_life_ms)
  if half_life_ms <= 0 or r[5] == 0 then
    r[6], r[7] = 0, 0
  elseif now > r[5] then
    local f = 2 ^ (-(now - r[5]) / half_life_ms)
    local k = half_life_ms * 1000 / LN2 * (1 - f)
    r[6], r[7] = r[6] * f + r[1] * k, r[7] * f + r[2] * k
  end
  r[5] = math.max(r[5], now)
  return r
end

-- One format for the seven ('%.17g' writes a whole number below 1e17 as
-- its digits, as usage_text does, and any other exactly).
local function usage_run_text(r)
  return string.format('%.17g %.17g %.17g %.17g %.17g %.17g %.17g', r[1], r[2], r[3], r[4], r[5], math.floor(r[6] + 0.5),
                       math.floor(r[7] + 0.5))
end

local function usage_tenant(job)
  return job.tenant or ''
end

-- What a tenant's and the queue's running jobs hold changes by `sign` x `amounts` at
-- `now` (ms): both <name>|run values brought to now, then moved (never below 0).
local function usage_held_move(usage_key, tenant, amounts, sign, now, half_life_ms)
  local values, out = redis.call('HMGET', usage_key, tenant .. '|run', '*|run'), {}
  for k, name in ipairs({tenant, '*'}) do
    local r = usage_run_at(usage_numbers(values[k], 7), now, half_life_ms)
    for i = 1, 4 do r[i] = math.max(r[i] + sign * amounts[i], 0) end
    out[#out + 1] = name .. '|run'; out[#out + 1] = usage_run_text(r)
  end
  redis.call('HSET', usage_key, unpack(out))
end

-- Claim under `fair`: the job's amounts, started `now` (ms; the job's started_at),
-- join its tenant's and the queue's held use. usage_key: keys.hpp usage; set:
-- claim's HSET list for the job (usage_run is added: 'h' and the half-life in ms,
-- which its end brings the held use to its time with, as this start did; an
-- earlier broker wrote '1'). Returns the tenant it charged.
local function usage_started(usage_key, job, amounts, set, now, half_life_ms)
  local tenant = usage_tenant(job)
  usage_held_move(usage_key, tenant, amounts, 1, now, half_life_ms)
  job.usage_run = 'h' .. int_s(half_life_ms)
  set[#set + 1] = 'usage_run'; set[#set + 1] = job.usage_run
  return tenant
end

-- The microseconds of Redis TIME (claim writes the job's started_us with it): the
-- call's one TIME (_lib.lua redis_time).
local function usage_clock_us()
  local t = redis_time()
  return t[1] * 1000000 + t[2]
end

-- Resource i's use over `dur_us` (its amount as text; not a number: the resource's
-- default) added to the job's record field, appended to `record` (n: its length; returns
-- the new one). dur_s: dur_us as text. '0' and '1', most amounts, are not
-- parsed, and for a record field the job does not hold yet (its first attempt) an
-- amount of 1 records the duration's text as it is.
local function usage_record(job, record, n, i, text, dur_us, dur_s)
  if text == '0' then return n end
  local field = USAGE_RECORD_FIELDS[i]
  local old, total = job[field], dur_s
  if text ~= '1' or old then
    local used = math.floor((tonumber(text) or USAGE_AMOUNT_DEFAULTS[i]) * dur_us)
    if not (used > 0) then return n end  -- (nor a NaN: tonumber reads 'nan')
    total = int_s(old and (tonumber(old) or 0) + used or used)
  elseif not (dur_us > 0) then
    return n
  end
  job[field] = total
  record[n + 1], record[n + 2] = field, total
  return n + 2
end

-- The keys usage_ended needs, declared in a transition's KEYS from `first`
-- (keys.hpp usage_transition_keys: the usage journal, the usage hash).
local function usage_keys(KEYS, first)
  return {journal = KEYS[first], usage = KEYS[first + 1]}
end

-- The end of a running attempt. u: usage_keys; job: as read, before release_budget
-- (which clears the charge); now: ms (now_s: the same as text, and started: the job's
-- started_at as a number, when the caller has them).
-- The job's record fields (usage_<resource>_us) are appended to `set` (the caller's
-- HSET of the job, so its reply has them) or, without one, written here; the queue's
-- journal gets the line usage_fold reads:
--   end ms TAB duration us TAB held TAB the four amounts TAB tenant TAB type TAB
--   worker ('-': none)
-- held: '0' the job held nothing in the usage hash (not claimed under `fair`); '2'
-- its amounts left <tenant>|run here, at its end, and its accrued use stays in r
-- until the fold moves it; '1' (written before the end freed them: a job claimed
-- by an earlier broker, usage_run '1') the fold takes its amounts away.
-- also: one more journal line, pushed in the same RPUSH (ack.lua's completion:
-- settle.lua), or alone when the attempt had no start.
-- Every table and string built here is paid again in the garbage collector:
-- the amounts stay in locals (usage_amount_texts returns no table), the record goes
-- straight into `set`, the line is one concatenation.
local function usage_ended(u, jk, job, now, set, now_s, started, also)
  started = started or tonumber(job.started_at or '')
  if not started then
    if also then redis.call('RPUSH', u.journal, also) end
    return
  end
  local t1, t2, t3, t4 = usage_amount_texts(job)
  local dur_us = usage_clock_us() - (tonumber(job.started_us or '') or started * 1000)
  if dur_us < 0 then dur_us = 0 end
  local held = '0'
  if job.usage_run then
    local half_life = string.match(job.usage_run, '^h(%d+)$')
    if half_life then
      held = '2'
      usage_held_move(u.usage, usage_tenant(job), usage_amount_numbers(t1, t2, t3, t4), -1, now, tonumber(half_life))
    else
      held = '1'
    end
    job.usage_run = nil
    redis.call('HDEL', jk, 'usage_run')
  end
  local dur_s = int_s(dur_us)
  local record = set or {}
  local n = #record
  n = usage_record(job, record, n, 1, t1, dur_us, dur_s)
  n = usage_record(job, record, n, 2, t2, dur_us, dur_s)
  n = usage_record(job, record, n, 3, t3, dur_us, dur_s)
  n = usage_record(job, record, n, 4, t4, dur_us, dur_s)
  if not set and n > 0 then redis.call('HSET', jk, unpack(record)) end
  local worker = job.worker_id
  local line = (now_s or int_s(now)) .. '\t' .. dur_s .. '\t' .. held .. '\t' .. t1 .. '\t' .. t2 .. '\t' .. t3 .. '\t' .. t4 ..
               '\t' .. usage_tenant(job) .. '\t' .. (job.type or '') .. '\t' .. ((worker or '') ~= '' and worker or '-')
  if also then redis.call('RPUSH', u.journal, line, also) else redis.call('RPUSH', u.journal, line) end
end

-- Folds up to `limit` lines of the journal, oldest first, into the usage hash, the
-- totals and the hourly rollup; returns how many it took off the journal. f: {journal,
-- usage, totals, hours, config} (keys.hpp settle_keys; config: its field
-- usage_half_life_ms). other(line): called with each line that is not a usage line,
-- in order (settle.lua's completions; without it they are dropped). Each
-- field is read once and written once, whatever the number of lines. A line's use
-- counts in the decayed sum as it would had it been added when the attempt ended:
-- decayed from its end to the last line's (one factor per line), the sum then
-- decayed with the stored values to the last line's end. What lines share
-- (a tenant's values, an hour's rollup fields) is built once per fold.
local function usage_fold(f, limit, other)
  local lines = redis.call('LRANGE', f.journal, '0', int_s(limit - 1))
  if #lines == 0 then return 0 end
  redis.call('LTRIM', f.journal, int_s(#lines), '-1')
  local drained = #lines < limit  -- (a full batch: more lines may wait)
  local half_life = usage_half_life(redis.call('HGET', f.config, 'usage_half_life_ms'))
  local last = 0  -- the last usage line's end (a completion line may come after it)
  for i = #lines, 1, -1 do
    last = tonumber(string.match(lines[i], '^%d+')) or 0
    if last > 0 then break end
  end
  local added, freed, names = {}, {}, {}  -- tenant -> resource-seconds to add / amounts no longer held
  local totals, hours, torder, horder = {}, {}, {}, {}
  local row_fields, hour_at, hour_s = {}, nil, nil
  for _, line in ipairs(lines) do
    local at, dur, was_held, a1, a2, a3, a4, who =
      string.match(line, '^(%d+)\t(%d+)\t(%d)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$')
    if not at then
      if other then other(line) end  -- not a usage line: the caller's, or dropped
    else
      at, dur = tonumber(at), tonumber(dur)
      local amounts = usage_amount_numbers(a1, a2, a3, a4)
      local tenant = string.match(who, '^[^\t]*')
      if not added[tenant] then added[tenant], freed[tenant] = {0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0}; names[#names + 1] = tenant end
      local factor = (half_life > 0 and at < last) and 2 ^ (-(last - at) / half_life) or 1
      -- The attempt's use as it accrued, each second decayed from when it was used to
      -- the end: amount x (half-life / ln 2) x (1 - 2^(-duration / half-life)), which
      -- is amount x duration for a run much shorter than the half-life. A run as long
      -- as the half-life counts 72% of it, not all of it at its end.
      local accrued = half_life > 0 and half_life / 1000 / LN2 * (1 - 2 ^ (-dur / 1000 / half_life)) or 0
      local add, free = added[tenant], freed[tenant]
      for i = 1, 4 do add[i] = add[i] + amounts[i] * accrued * factor end
      if was_held == '2' then
        -- Its amounts left <tenant>|run at its end; its use accrued there until then,
        -- and has decayed there since, leaves it in the step that adds it to the
        -- decayed use: counted once, never missing in between.
        free[7], free[8] = free[7] + amounts[1] * accrued * factor, free[8] + amounts[2] * accrued * factor
      elseif was_held == '1' then
        -- (Written by an earlier broker, whose end left the amounts held.) Its amounts
        -- leave <tenant>|run, and its use so far the running use. `start`: what is
        -- left at `last` of each unit held since its start (usage_run_at).
        local start = half_life > 0 and 2 ^ (-(last - at + dur / 1000) / half_life) or 0
        for i = 1, 4 do free[i] = free[i] + amounts[i] end
        free[5], free[6] = free[5] + amounts[1] * start, free[6] + amounts[2] * start
      end
      -- The rollup's fields: hour TAB tenant TAB type TAB worker TAB resource.
      local hour = math.floor(at / 3600000)
      if hour ~= hour_at then hour_at, hour_s = hour, int_s(hour) end
      local row = hour_s .. '\t' .. who
      local rf = row_fields[row]
      if not rf then
        rf = {}
        for i, name in ipairs(USAGE_RESOURCES) do rf[i] = {tenant .. '\t' .. name, row .. '\t' .. name} end
        row_fields[row] = rf
      end
      for i = 1, 4 do
        local n = math.floor(amounts[i] * dur)
        if n > 0 then
          local t, h = rf[i][1], rf[i][2]
          if not totals[t] then totals[t] = 0; torder[#torder + 1] = t end
          if not hours[h] then hours[h] = 0; horder[#horder + 1] = h end
          totals[t], hours[h] = totals[t] + n, hours[h] + n
        end
      end
    end
  end
  if #names == 0 then return #lines end
  local all_added, all_freed = {0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0}
  for _, name in ipairs(names) do
    for i = 1, 4 do all_added[i] = all_added[i] + added[name][i] end
    for i = 1, 8 do all_freed[i] = all_freed[i] + freed[name][i] end
  end
  names[#names + 1] = '*'; added['*'], freed['*'] = all_added, all_freed
  local fields = {}
  for _, name in ipairs(names) do fields[#fields + 1] = name; fields[#fields + 1] = name .. '|run' end
  local cur = redis.call('HMGET', f.usage, unpack(fields))
  local out = {}
  for k, name in ipairs(names) do
    local v = usage_decayed(usage_numbers(cur[2 * k - 1], 5), last, half_life)
    local run, free = usage_run_at(usage_numbers(cur[2 * k], 7), last, half_life), freed[name]
    -- Its running use goes as of the value's time (a claim may have written it after `last`).
    local k_us, decay = half_life * 1000 / LN2, half_life > 0 and 2 ^ (-(run[5] - last) / half_life) or 0
    for i = 1, 4 do
      v[i + 1] = v[i + 1] + added[name][i]  -- (0 with half-life 0: nothing accrues)
      run[i] = math.max(run[i] - free[i], 0)
    end
    for i = 1, 2 do
      -- Never below 0 nor, once the journal is drained (every ended attempt's use
      -- moved out), above what is held can have used (0 once nothing is): rounding,
      -- and attempts that ran under another half-life, leave nothing behind.
      local left = math.max(run[i + 5] - k_us * (free[i] - decay * free[i + 4]) - 1e6 * decay * free[i + 6], 0)
      run[i + 5] = drained and math.min(left, run[i] * k_us) or left
    end
    out[#out + 1] = fields[2 * k - 1]; out[#out + 1] = usage_text(v)
    out[#out + 1] = fields[2 * k]; out[#out + 1] = usage_run_text(run)
  end
  redis.call('HSET', f.usage, unpack(out))
  for _, t in ipairs(torder) do redis.call('HINCRBY', f.totals, t, int_s(totals[t])) end
  for _, h in ipairs(horder) do redis.call('HINCRBY', f.hours, h, int_s(hours[h])) end
  return #lines
end
