-- [usage] Resource accounting (docs/operations.md#resource-accounting, issue #32).
-- Every end of a running attempt (ack, fail: retry, requeue, reclaim, discard;
-- cancel) charges what the job held from its start to now, in resource-microseconds,
-- exactly once and in the same step as the transition: the job hash gets its record
-- (usage_<resource>_us, summed over its attempts) and the queue's usage journal
-- (keys.hpp usage_journal) one line. The journal is folded, oldest line first, into
--   the queue's totals (keys.hpp usage_totals: tenant TAB resource -> us, never
--   decayed; /metrics ojs_resource_seconds_total), its per-hour rollup (keys.hpp
--   usage_hours: hour TAB tenant TAB type TAB worker TAB resource -> us, trimmed to
--   --usage-retention-hours by the broker), and the decayed usage that the `fair`
--   policy weighs (keys.hpp usage: see below)
-- by usage_fold: before every read of them (a `fair` claim, the usage report, the
-- metrics; usage_fold.lua) and by the broker's maintenance pass. Why a journal: the
-- fold of a line costs a few thousand instructions where updating the five hashes
-- at each end cost ~250k (bench/lua-callgrind.sh), and lines of the same tenant and
-- hour fold into one write. Folding in order gives the same numbers as updating in
-- place: each line carries its end time, and decay is applied line by line.
-- Resources, in this order everywhere: gpu (GPUs charged), cpu (the job's
-- ext_ml cpu_cores, 1 when none), memory_mb (host memory declared, MB), gpu_memory_mb
-- (GPU memory charged, MB). Amount x microseconds: exact integers.
local USAGE_RESOURCES = {'gpu', 'cpu', 'memory_mb', 'gpu_memory_mb'}

-- What the job holds while it runs, one amount per resource, as the job's fields
-- hold them (read before release_budget, which clears the charge), and as numbers.
local function usage_amount_texts(job)
  return {job.charged_gpus or '0', job.cpus or '1', job.mem_mb or '0', job.charged_gpu_mem_mb or '0'}
end

local function usage_amount_numbers(texts)
  return {tonumber(texts[1]) or 0, tonumber(texts[2]) or 1, tonumber(texts[3]) or 0, tonumber(texts[4]) or 0}
end

local function usage_amounts(job)
  return usage_amount_numbers(usage_amount_texts(job))
end

-- The usage hash (keys.hpp usage) of a queue, per tenant ('*': the whole queue;
-- '': jobs without a tenant; tenant names never hold '*' or '|'):
--   <tenant>      'at u1 u2 u3 u4': resource-seconds used by ended attempts,
--                 decayed to `at` (ms) with the queue's half-life;
--   <tenant>|run  'n1 n2 n3 n4 at hl s1 s2 s3 s4': what the tenant's running jobs
--                 hold now (n), kept by claim under `fair` (the job's field usage_run
--                 says it was added), and the same amounts each decayed from its
--                 attempt's start to `at` (ms) with half-life `hl` (ms): the running
--                 attempts' use so far is (hl / ln 2) x (n - s decayed to now)
--                 (usage_running), so it counts as it accrues, not only at the end.
-- A missing or short value reads as zeros.
local USAGE_HALF_LIFE_MS = 3600000  -- the default of tenant_fairness.half_life_seconds (an hour)
local LN2 = 0.69314718055994531

local function usage_numbers(raw, n)
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

-- A <tenant>|run value `r` (its 10 numbers) with its decayed starts brought to
-- `now`. Why a sum decayed to one time and not each attempt's start: the use so far
-- of attempts started at t_j, sum of n_j x (hl / ln 2) x (1 - 2^(-(now - t_j) / hl)),
-- is (hl / ln 2) x (sum n_j - sum n_j x 2^(-(now - t_j) / hl)), and the second sum
-- decays as one value: a start adds n_j, an end subtracts its term (usage_fold),
-- whatever the number of attempts. Stored at the time of its last write, so it
-- never grows past n (no epoch to rebase). A value written under another half-life
-- (or before the starts were kept: `at` 0) restarts from `now`: its attempts count
-- from then on, and what that forgets of them is at most their use before it.
local function usage_run_at(r, now, half_life_ms)
  if half_life_ms <= 0 then
    for i = 7, 10 do r[i] = 0 end
  elseif r[5] == 0 or r[6] ~= half_life_ms then
    for i = 1, 4 do r[i + 6] = r[i] end
  elseif now ~= r[5] then
    local f = 2 ^ (-(now - r[5]) / half_life_ms)
    for i = 7, 10 do r[i] = r[i] * f end
  end
  r[5], r[6] = now, half_life_ms
  return r
end

-- The use so far, in resource-seconds decayed to `now`, of the running attempts of
-- a <tenant>|run value `r` (nothing for a value of another half-life: see above).
local function usage_running(r, now, half_life_ms)
  if half_life_ms <= 0 or r[5] == 0 or r[6] ~= half_life_ms then return {0, 0, 0, 0} end
  local f, k = 2 ^ (-(now - r[5]) / half_life_ms), half_life_ms / 1000 / LN2
  local out = {}
  for i = 1, 4 do out[i] = math.max(k * (r[i] - r[i + 6] * f), 0) end
  return out
end

-- A tenant's use as the fair order weighs it: {used = resource-seconds decayed to
-- now, ended attempts' and running ones' so far, held = what its running jobs
-- hold}, from its two fields as read.
local function usage_view(decayed, run, now, half_life_ms)
  local d = usage_decayed(usage_numbers(decayed, 5), now, half_life_ms)
  local r = usage_numbers(run, 10)
  local a = usage_running(r, now, half_life_ms)
  return {used = {d[2] + a[1], d[3] + a[2], d[4] + a[3], d[5] + a[4]}, held = {r[1], r[2], r[3], r[4]}}
end

-- [fairshare] The share of tenant view `v` in the queue's view `q`: its fraction of
-- the queue's decayed use plus its fraction of what the queue holds now, of the
-- queue's dominant resource: GPUs when the queue uses or holds any, else CPU cores
-- (a CPU-only queue). Not the largest fraction per tenant (DRF over capacity): the
-- claim knows no capacity, and over the queue's own totals a lightly used resource
-- (a few CPU jobs in a GPU queue) would make one job a whole share (the simulator's
-- trace put team-a at 0.20 instead of 0.25 that way).
local function usage_share(v, q)
  for i = 1, 2 do
    if q.used[i] > 0 or q.held[i] > 0 then
      local s = 0
      if q.used[i] > 0 then s = v.used[i] / q.used[i] end
      if q.held[i] > 0 then s = s + v.held[i] / q.held[i] end
      return s
    end
  end
  return 0
end

-- Adds a running job's amounts, started `now`, to <tenant>|run fields read as
-- `values`; returns the HSET arguments.
local function usage_run_added(fields, values, amounts, now, half_life_ms)
  local out = {}
  for k, f in ipairs(fields) do
    local r = usage_run_at(usage_numbers(values[k], 10), now, half_life_ms)
    for i = 1, 4 do
      r[i] = r[i] + amounts[i]
      if half_life_ms > 0 then r[i + 6] = r[i + 6] + amounts[i] end
    end
    out[#out + 1] = f; out[#out + 1] = usage_text(r)
  end
  return out
end

local function usage_tenant(job)
  return job.tenant or ''
end

-- Claim under `fair`: the job's amounts, started `now` (ms; the job's started_at),
-- join its tenant's and the queue's held use. usage_key: keys.hpp usage; set:
-- claim's HSET list for the job (usage_run is added). Returns the tenant it charged.
local function usage_started(usage_key, job, amounts, set, now, half_life_ms)
  local tenant = usage_tenant(job)
  local fields = {tenant .. '|run', '*|run'}
  redis.call('HSET', usage_key, unpack(usage_run_added(fields, redis.call('HMGET', usage_key, unpack(fields)), amounts, now,
                                                       half_life_ms)))
  job.usage_run = '1'
  set[#set + 1] = 'usage_run'; set[#set + 1] = '1'
  return tenant
end

-- The microseconds of Redis TIME (claim writes the job's started_us with it): the
-- call's one TIME (_lib.lua redis_time).
local function usage_clock_us()
  local t = redis_time()
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The key usage_ended needs, declared in a transition's KEYS at `first`
-- (keys.hpp usage_transition_keys: the usage journal).
local function usage_keys(KEYS, first)
  return {journal = KEYS[first]}
end

-- The end of a running attempt. u: usage_keys; job: as read, before release_budget
-- (which clears the charge); now: ms. The job's record fields (usage_<resource>_us)
-- are appended to `set` (the caller's HSET of the job, so its reply has them) or,
-- without one, written here; the queue's journal gets the line usage_fold reads:
--   end ms TAB duration us TAB held ('1': its amounts leave <tenant>|run) TAB
--   the four amounts TAB tenant TAB type TAB worker ('-': none)
local function usage_ended(u, jk, job, now, set)
  local started = tonumber(job.started_at or '')
  if not started then return end
  local texts = usage_amount_texts(job)
  local amounts = usage_amount_numbers(texts)
  local dur_us = math.max(usage_clock_us() - (tonumber(job.started_us or '') or started * 1000), 0)
  local held = '0'
  if job.usage_run then
    held, job.usage_run = '1', nil
    redis.call('HDEL', jk, 'usage_run')
  end
  local record = {}
  for i, name in ipairs(USAGE_RESOURCES) do
    local used = math.floor(amounts[i] * dur_us)
    if used > 0 then
      local field = 'usage_' .. name .. '_us'
      job[field] = int_s((tonumber(job[field] or '0') or 0) + used)
      record[#record + 1] = field; record[#record + 1] = job[field]
    end
  end
  if set then
    for i = 1, #record do set[#set + 1] = record[i] end
  elseif #record > 0 then
    redis.call('HSET', jk, unpack(record))
  end
  redis.call('RPUSH', u.journal, table.concat({int_s(now), int_s(dur_us), held, texts[1], texts[2], texts[3], texts[4],
                                               usage_tenant(job), job.type or '',
                                               (job.worker_id or '') ~= '' and job.worker_id or '-'}, '\t'))
end

-- Folds up to `limit` lines of the journal, oldest first, into the usage hash, the
-- totals and the hourly rollup; returns how many. f: {journal, usage, totals, hours,
-- config} (keys.hpp usage_fold_keys; config: its field usage_half_life_ms). Each
-- field is read once and written once, whatever the number of lines. A line's use
-- counts in the decayed sum as it would had it been added when the attempt ended:
-- decayed from its end to the last line's (one factor per line), the sum then
-- decayed with the stored values to the last line's end. [hotpath] What lines share
-- (a tenant's values, an hour's rollup fields) is built once per fold.
local function usage_fold(f, limit)
  local lines = redis.call('LRANGE', f.journal, '0', int_s(limit - 1))
  if #lines == 0 then return 0 end
  redis.call('LTRIM', f.journal, int_s(#lines), '-1')
  local half_life = usage_half_life(redis.call('HGET', f.config, 'usage_half_life_ms'))
  local last = tonumber(string.match(lines[#lines], '^%d+')) or 0
  local added, freed, names = {}, {}, {}  -- tenant -> resource-seconds to add / amounts no longer held
  local totals, hours, torder, horder = {}, {}, {}, {}
  local row_fields, hour_at, hour_s = {}, nil, nil
  for _, line in ipairs(lines) do
    local at, dur, was_held, a1, a2, a3, a4, who =
      string.match(line, '^(%d+)\t(%d+)\t(%d)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$')
    if at then  -- a malformed line (never written by usage_ended) is dropped
      at, dur = tonumber(at), tonumber(dur)
      local amounts = usage_amount_numbers({a1, a2, a3, a4})
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
      if was_held == '1' then
        -- Its amounts leave <tenant>|run, and their start's term the decayed starts
        -- (as of `last`), in the step that adds its use to the decayed use: counted
        -- once, running until the fold, ended after it.
        local start = half_life > 0 and 2 ^ (-(last - at + dur / 1000) / half_life) or 0
        for i = 1, 4 do free[i], free[i + 4] = free[i] + amounts[i], free[i + 4] + amounts[i] * start end
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
    local run, free = usage_run_at(usage_numbers(cur[2 * k], 10), last, half_life), freed[name]
    for i = 1, 4 do
      v[i + 1] = v[i + 1] + added[name][i]  -- (0 with half-life 0: nothing accrues)
      run[i] = math.max(run[i] - free[i], 0)
      -- Never above what is held (0 once nothing is): rounding, and an attempt
      -- started before a half-life change, leave nothing behind.
      run[i + 6] = math.min(math.max(run[i + 6] - free[i + 4], 0), run[i])
    end
    out[#out + 1] = fields[2 * k - 1]; out[#out + 1] = usage_text(v)
    out[#out + 1] = fields[2 * k]; out[#out + 1] = usage_text(run)
  end
  redis.call('HSET', f.usage, unpack(out))
  for _, t in ipairs(torder) do redis.call('HINCRBY', f.totals, t, int_s(totals[t])) end
  for _, h in ipairs(horder) do redis.call('HINCRBY', f.hours, h, int_s(hours[h])) end
  return #lines
end
