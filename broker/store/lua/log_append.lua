-- A worker's chunks of a job's stdout/stderr, appended to the job's log
-- (keys.hpp log: a stream, one entry per chunk: s = stdout | stderr | notice, d = the
-- bytes). The log is bounded: past `max_bytes` the oldest entries go (the most recent
-- output is what explains a failure) and the job counts what went (log_dropped). A
-- chunk longer than the bound keeps its last max_bytes. Only the worker holding the
-- job (its worker_id) may write; its chunks stay welcome after it reported (the
-- report and the last chunk may cross).
-- KEYS (2): 1 job hash, 2 the job's log
-- ARGV: 1 worker_id ('' = not checked), 2 max_bytes, 3 bytes the worker skipped itself (counted as
--       dropped), then stream, data pairs
-- Reply: {'ok', bytes kept, bytes dropped} | {'not_found'} | {'conflict', holder}
local jk, log = KEYS[1], KEYS[2]
local worker, max_bytes = ARGV[1], tonumber(ARGV[2])
local f = redis.call('HMGET', jk, 'state', 'worker_id', 'log_bytes', 'log_dropped')
if not f[1] then return {'not_found'} end
if worker ~= '' and f[2] ~= worker then return {'conflict', f[2] or ''} end
local bytes, dropped = tonumber(f[3] or '0'), tonumber(f[4] or '0') + tonumber(ARGV[3])
for i = 4, #ARGV, 2 do
  local data = ARGV[i + 1]
  if #data > max_bytes then
    dropped = dropped + #data - max_bytes
    data = string.sub(data, #data - max_bytes + 1)
  end
  if #data > 0 then
    redis.call('XADD', log, '*', 's', ARGV[i], 'd', data)
    bytes = bytes + #data
  end
end
-- Oldest first until within the bound (each XRANGE reads a page of the oldest).
while bytes > max_bytes do
  local oldest = redis.call('XRANGE', log, '-', '+', 'COUNT', '64')
  if #oldest == 0 then bytes = 0 break end
  for _, e in ipairs(oldest) do
    if bytes <= max_bytes then break end
    local fields = e[2]
    local size = 0
    for j = 1, #fields, 2 do if fields[j] == 'd' then size = #fields[j + 1] end end
    redis.call('XDEL', log, e[1])
    bytes, dropped = bytes - size, dropped + size
  end
end
-- The count stays exact (a double's 2^53) and printable however much is reported.
if dropped > 9007199254740991 then dropped = 9007199254740991 end
redis.call('HSET', jk, 'log_bytes', int_s(bytes), 'log_dropped', int_s(dropped))
return {'ok', bytes, dropped}
