-- Checkpoint commit: the worker holding the job records checkpoint metadata.
-- last_checkpoint = this one; history kept as fields ckpt:<seq> of the job hash
-- (deleted with it), the newest max_count of them rendered into `checkpoints`
-- (FIFO eviction). JSON text is stored as the broker wrote it, never re-encoded.
-- KEYS (2): 1 job hash, 2 events
-- ARGV: worker_id ('' = any holder), checkpoint_json, max_count
-- Reply: {'ok'} | {'not_found'} | {'conflict', state}
-- The job is not in the reply: JobStore::checkpoint reads it back natively behind the
-- call. Only the fields tested and the kept history are read into Lua.
local worker, checkpoint, max_count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local jk = KEYS[1]
local job = read_fields(jk, {'id', 'state', 'worker_id', 'gang_workers', 'ckpt_seq', 'type', 'queue', 'attempt', 'tenant'})
if not job then return {'not_found'} end
if job.state ~= 'active' then return {'conflict', job.state} end
if worker ~= '' and not held_by(job, worker) then return {'conflict', 'active (held by another worker)'} end
local seq = tonumber(job.ckpt_seq or '0') + 1
local now = now_ms()
redis.call('HSET', jk, 'ckpt_seq', seq, 'ckpt:' .. seq, checkpoint, 'last_checkpoint', checkpoint, 'last_checkpoint_at', now)
local first = math.max(1, seq - max_count + 1)
-- Older than the newest max_count: evicted, down to the first already gone (a lowered
-- max_count leaves several).
local evict = {}
for i = first - 1, 1, -1 do
  if redis.call('HEXISTS', jk, 'ckpt:' .. i) == 0 then break end
  evict[#evict + 1] = 'ckpt:' .. i
end
if #evict > 0 then redis.call('HDEL', jk, unpack(evict)) end
local parts = {}
if first < seq then
  local names = {}
  for i = first, seq - 1 do names[#names + 1] = 'ckpt:' .. i end
  for _, v in ipairs(redis.call('HMGET', jk, unpack(names))) do
    if v then parts[#parts + 1] = v end
  end
end
parts[#parts + 1] = checkpoint
redis.call('HSET', jk, 'checkpoints', '[' .. table.concat(parts, ',') .. ']')
emit(KEYS[2], 'job.checkpointed', job, {'sequence', tostring(seq)})
return {'ok'}
