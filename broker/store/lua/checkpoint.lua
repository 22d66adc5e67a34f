-- Checkpoint commit: the worker holding the job records checkpoint metadata.
-- last_checkpoint = this one; history kept as fields ckpt:<seq> of the job hash
-- (deleted with it), the newest max_count of them rendered into `checkpoints`
-- (FIFO eviction). JSON text is stored as the broker wrote it, never re-encoded.
-- KEYS (2): 1 job hash, 2 events
-- ARGV: worker_id ('' = any holder), checkpoint_json, max_count
-- Reply: {'ok', job fields} | {'not_found'} | {'conflict', state}
local worker, checkpoint, max_count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local jk = KEYS[1]
local job = read_job(jk)
if not job then return {'not_found'} end
if job.state ~= 'active' then return {'conflict', job.state} end
if worker ~= '' and not held_by(job, worker) then return {'conflict', 'active (held by another worker)'} end
local seq = tonumber(job.ckpt_seq or '0') + 1
local now = now_ms()
job.ckpt_seq, job['ckpt:' .. seq], job.last_checkpoint, job.last_checkpoint_at = seq, checkpoint, checkpoint, now
redis.call('HSET', jk, 'ckpt_seq', seq, 'ckpt:' .. seq, checkpoint, 'last_checkpoint', checkpoint, 'last_checkpoint_at', now)
local first = math.max(1, seq - max_count + 1)
local evict = {}
for i = first - 1, 1, -1 do
  if not job['ckpt:' .. i] then break end
  job['ckpt:' .. i] = nil
  evict[#evict + 1] = 'ckpt:' .. i
end
if #evict > 0 then redis.call('HDEL', jk, unpack(evict)) end
local parts = {}
for i = first, seq do
  if job['ckpt:' .. i] then parts[#parts + 1] = job['ckpt:' .. i] end
end
job.checkpoints = '[' .. table.concat(parts, ',') .. ']'
redis.call('HSET', jk, 'checkpoints', job.checkpoints)
emit(KEYS[2], 'job.checkpointed', job, {'sequence', tostring(seq)})
return {'ok', flat_job(job)}
