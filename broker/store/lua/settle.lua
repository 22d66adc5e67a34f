-- Settles a queue's ended attempts: folds the usage journal (_lib_accounting.lua
-- usage_fold) and writes what each end line (ack.lua, fail.lua) stands for, which the
-- transition no longer writes itself: the queue's completed and discarded counts and
-- its minutes' processed and failed counts (stats), the finished indexes (id -> end
-- ms), the type's run times.
-- Run before every read of these (broker/store/settle.cpp) and by the maintenance
-- pass, about once a second. The lines leave the journal in the same call as the
-- writes they stand for, so a broker killed at any instant neither loses an end nor
-- counts one twice.
-- The end lines, besides the usage lines:
--   a completion: 'c' TAB end ms TAB job id TAB run time ms ('' without a start) TAB job type;
--   a failed attempt retried: 'f' TAB end ms;
--   a failed attempt discarded (or dead-lettered): 'd' TAB end ms TAB job id. It joins the
--   discarded index only if the job is still that discard (its state discarded, its
--   discarded_at the line's end): retried by an admin, deleted or discarded again since,
--   it does not (its count and minute stand: the discard happened).
-- KEYS (9): 1 usage journal, 2 stats, 3 finished prefix (keys.hpp finished_prefix),
--           4 run-times prefix (keys.hpp run_times_prefix), 5 usage hash, 6 usage totals,
--           7 hourly rollup, 8 config, 9 job prefix (keys.hpp settle_keys)
-- ARGV: 1 the most journal lines to settle in this call
-- Reply: 1 when more may wait (call again), 0 when the journal is empty
local limit = tonumber(ARGV[1])
local finished, discarded, minutes, minute_order, times, type_order = {}, {}, {}, {}, {}, {}
local completed = 0
-- The minute of the line before, as its first field's prefix and its bounds in ms as
-- text: the lines come in time order, so most fall in it, told by comparing texts of
-- equal length (no number parsed, no field built).
local minute, minute_from, minute_to = nil, '', ''
local function count_in_minute(at, what)
  if not (#at == #minute_to and #at == #minute_from and at >= minute_from and at < minute_to) then
    local m = math.floor(tonumber(at) / 60000)
    minute, minute_from, minute_to = 'm' .. int_s(m) .. ':', int_s(m * 60000), int_s((m + 1) * 60000)
  end
  local field = minute .. what
  if not minutes[field] then minutes[field] = 0; minute_order[#minute_order + 1] = field end
  minutes[field] = minutes[field] + 1
end
local function completion(line)
  local at, id, run_ms, job_type = string.match(line, '^c\t(%d+)\t([^\t]+)\t([^\t]*)\t(.*)$')
  if not at then return end  -- (never written so: dropped)
  completed = completed + 1
  count_in_minute(at, 'processed')
  finished[#finished + 1] = at; finished[#finished + 1] = id
  if run_ms ~= '' and job_type ~= '' then
    if not times[job_type] then times[job_type] = {}; type_order[#type_order + 1] = job_type end
    local t = times[job_type]
    t[#t + 1] = run_ms
  end
end
local function end_line(line)
  local kind = string.byte(line, 1)
  if kind == 99 then return completion(line) end  -- 'c'
  if kind == 102 then  -- 'f'
    local at = string.match(line, '^f\t(%d+)$')
    if at then count_in_minute(at, 'failed') end
  elseif kind == 100 then  -- 'd'
    local at, id = string.match(line, '^d\t(%d+)\t([^\t]+)$')
    if at then
      count_in_minute(at, 'failed')
      discarded[#discarded + 1] = at; discarded[#discarded + 1] = id
    end
  end
end
local taken = usage_fold({journal = KEYS[1], usage = KEYS[5], totals = KEYS[6], hours = KEYS[7], config = KEYS[8]}, limit,
                         end_line)
if completed > 0 then
  redis.call('HINCRBY', KEYS[2], 'completed', int_s(completed))
  redis.call('ZADD', KEYS[3] .. 'completed', unpack(finished))
end
if #discarded > 0 then
  redis.call('HINCRBY', KEYS[2], 'discarded', int_s(#discarded / 2))
  local still = {}
  for i = 1, #discarded, 2 do
    local at, id = discarded[i], discarded[i + 1]
    local f = redis.call('HMGET', KEYS[9] .. id, 'state', 'discarded_at')
    if f[1] == 'discarded' and f[2] == at then still[#still + 1] = at; still[#still + 1] = id end
  end
  if #still > 0 then redis.call('ZADD', KEYS[3] .. 'discarded', unpack(still)) end
end
for _, m in ipairs(minute_order) do redis.call('HINCRBY', KEYS[2], m, int_s(minutes[m])) end
-- The last 64 run times (ms, newest first) of each job type, as the start estimate
-- reads them (keys.hpp run_times_kept): trimmed when the list reaches twice that.
-- Each list expires a week after the settling that last wrote it, so a deleted
-- queue's lists (whose types no index names for delete_queue.lua) do not stay behind.
for _, job_type in ipairs(type_order) do
  local key = KEYS[4] .. job_type
  if redis.call('LPUSH', key, unpack(times[job_type])) >= 128 then redis.call('LTRIM', key, '0', '63') end
  redis.call('PEXPIRE', key, '604800000')
end
return taken >= limit and 1 or 0
