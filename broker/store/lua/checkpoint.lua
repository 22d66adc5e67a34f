-- Checkpoint commit: the worker holding the job records checkpoint metadata.
-- last_checkpoint = this one; history kept as fields ckpt:<seq> of the job hash
-- (deleted with it), the newest max_count of them rendered into `checkpoints`
-- (FIFO eviction). JSON text is stored as the broker wrote it, never re-encoded.
-- ARGV: prefix, id, worker_id ('' = any holder), checkpoint_json, max_count
local prefix, id, worker, checkpoint, max_count = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local jk = job_key(prefix, id)
local f = redis.call('HMGET', jk, 'state', 'worker_id')
if not f[1] then return {'not_found'} end
if f[1] ~= 'active' then return {'conflict', f[1]} end
if worker ~= '' and f[2] ~= worker then return {'conflict', 'active (held by another worker)'} end
local seq = redis.call('HINCRBY', jk, 'ckpt_seq', 1)
redis.call('HSET', jk, 'ckpt:' .. seq, checkpoint, 'last_checkpoint', checkpoint, 'last_checkpoint_at', now_ms())
local first = math.max(1, seq - max_count + 1)
local evict = {}
for i = first - 1, 1, -1 do
  if redis.call('HEXISTS', jk, 'ckpt:' .. i) == 0 then break end
  table.insert(evict, 'ckpt:' .. i)
end
if #evict > 0 then redis.call('HDEL', jk, unpack(evict)) end
local parts = {}
for i = first, seq do
  local v = redis.call('HGET', jk, 'ckpt:' .. i)
  if v then table.insert(parts, v) end
end
redis.call('HSET', jk, 'checkpoints', '[' .. table.concat(parts, ',') .. ']')
emit(prefix, 'job.checkpointed', id, {'sequence', tostring(seq)})
return {'ok', job_snapshot(prefix, id)}
