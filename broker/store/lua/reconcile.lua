-- Ledger reconciliation: compares the queue's GPU ledger and its per-tenant ledger
-- with the sums of charged_gpus (and charged_gpu_mem_mb, borrowed_gpus, charged_tpu_chips) over the active jobs, in one atomic snapshot; with
-- repair it rewrites both ledgers to the sums.
-- KEYS (5): 1 active, 2 ledger, 3 tenant ledger, 4 job prefix, 5 gangs (forming gangs hold GPUs too)
-- ARGV: repair ('1' or '0')
-- Reply: {ledger_gpus, ledger_jobs, actual_gpus, actual_jobs, {tenant, ledger, actual, ...}, repaired (0/1),
--         ledger_gpu_mem_mb, actual_gpu_mem_mb, ledger_tpu_chips, actual_tpu_chips}
local repair = ARGV[1] == '1'
local gpus, jobs, mem, borrowed, tpu, tenants = 0, 0, 0, 0, 0, {}
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, id in ipairs(redis.call('ZRANGE', KEYS[5], 0, -1)) do ids[#ids + 1] = id end
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', KEYS[4] .. id, 'charged_gpus', 'tenant', 'charged_gpu_mem_mb', 'borrowed_gpus', 'charged_tpu_chips')
  local charged = tonumber(f[1] or '0') or 0
  mem = mem + (tonumber(f[3] or '0') or 0)
  borrowed = borrowed + (tonumber(f[4] or '0') or 0)
  tpu = tpu + (tonumber(f[5] or '0') or 0)
  if charged > 0 then
    gpus, jobs = gpus + charged, jobs + 1
    if f[2] and f[2] ~= '' then tenants[f[2]] = (tenants[f[2]] or 0) + charged end
  end
end
local led = redis.call('HMGET', KEYS[2], 'gpus', 'gpu_jobs', 'gpu_mem_mb', 'tpu_chips')
local ledger_gpus, ledger_jobs, ledger_mem = tonumber(led[1] or '0'), tonumber(led[2] or '0'), tonumber(led[3] or '0')
local ledger_tpu = tonumber(led[4] or '0')
local rows, ledger_tenants = {}, {}
local flat = redis.call('HGETALL', KEYS[3])
for i = 1, #flat, 2 do ledger_tenants[flat[i]] = tonumber(flat[i + 1]) end
for t, v in pairs(ledger_tenants) do
  if v ~= 0 or tenants[t] then table.insert(rows, t); table.insert(rows, v); table.insert(rows, tenants[t] or 0) end
end
for t, v in pairs(tenants) do
  if ledger_tenants[t] == nil then table.insert(rows, t); table.insert(rows, 0); table.insert(rows, v) end
end
if repair then
  redis.call('HSET', KEYS[2], 'gpus', gpus, 'gpu_jobs', jobs, 'gpu_mem_mb', mem, 'borrowed_gpus', borrowed, 'tpu_chips', tpu)
  redis.call('DEL', KEYS[3])
  for t, v in pairs(tenants) do redis.call('HSET', KEYS[3], t, v) end
end
return {ledger_gpus, ledger_jobs, gpus, jobs, rows, repair and 1 or 0, ledger_mem, mem, ledger_tpu, tpu}
