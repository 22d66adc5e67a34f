-- The durable-execution checkpoint of a job (ojs-durable-execution.md): one
-- state per job, kept in the job hash (durable_state: the state's JSON text as the
-- broker wrote it; durable_sequence; durable_at, ms), overwritten by each save and
-- removed by a delete; a save after a delete starts the sequence again at 1. Apart
-- from the ML checkpoints (checkpoint.lua: storage keys, steps, a history).
-- KEYS (1): 1 job hash
-- ARGV: 'save' | 'delete', worker_id ('' = any holder), the state's JSON text (save)
-- Reply: {'ok', sequence ('0' for a delete)} | {'not_found'} | {'conflict', state}
local op, worker = ARGV[1], ARGV[2]
local jk = KEYS[1]
local f = redis.call('HMGET', jk, 'state', 'worker_id', 'gang_workers', 'durable_sequence')
if not f[1] then return {'not_found'} end
if op == 'delete' then
  redis.call('HDEL', jk, 'durable_state', 'durable_sequence', 'durable_at')
  return {'ok', '0'}
end
-- A job that ended has no run to resume: refused. A save naming its worker must come
-- from the job's holder while it runs (ojs-durable-execution.md 4.2); without one, any
-- job still to run may be given its state (the public conformance cases save one
-- before the job is fetched, to resume from on its first attempt).
if is_terminal(f[1]) then return {'conflict', f[1]} end
if worker ~= '' and (f[1] ~= 'active' or not held_by({worker_id = f[2], gang_workers = f[3] or nil}, worker)) then
  return {'conflict', f[1] == 'active' and 'active (held by another worker)' or f[1]}
end
local seq = int_s(tonumber(f[4] or '0') + 1)
redis.call('HSET', jk, 'durable_state', ARGV[3], 'durable_sequence', seq, 'durable_at', int_s(now_ms()))
return {'ok', seq}
