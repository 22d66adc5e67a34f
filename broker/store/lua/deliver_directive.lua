-- What a worker's contact is told when its directive is terminate
-- or drain (WorkerRegistry::contact calls this only then).
-- terminate ends with the worker's exit: it is recorded against the incarnation
-- it first reaches (the worker's started_at / hostname / pid), and a contact from
-- another incarnation (the worker restarted under the same id) finds the worker
-- running again. Without an incarnation the directive stays until resumed.
-- drain answers quiet while the worker holds a job and becomes terminate once it
-- holds none (the caller read its held sets in the same contact; a draining
-- worker claims nothing, so none can be added in between).
-- KEYS (1): the worker's hash  (global key, one worker)
-- ARGV: incarnation ('' when the worker sent none), '1' when the worker holds no job
-- Reply: the state the worker is told (running | quiet | terminate)
local state = redis.call('HGET', KEYS[1], 'state') or 'running'
if state == 'drain' then
  if ARGV[2] ~= '1' then return 'quiet' end
  state = 'terminate'
  redis.call('HSET', KEYS[1], 'state', state)
  redis.call('HDEL', KEYS[1], 'terminated_by')
end
if state ~= 'terminate' or ARGV[1] == '' then return state end
local by = redis.call('HGET', KEYS[1], 'terminated_by')
if not by then
  redis.call('HSET', KEYS[1], 'terminated_by', ARGV[1])
  return state
end
if by == ARGV[1] then return state end
redis.call('HSET', KEYS[1], 'state', 'running')
redis.call('HDEL', KEYS[1], 'terminated_by')
return 'running'
