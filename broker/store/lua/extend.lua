-- BEAT: extend the visibility deadline of jobs this worker still holds.
-- ARGV: prefix, worker_id, visibility_ms, ids...
local prefix, worker, vis = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = now_ms()
local extended = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local jk = job_key(prefix, id)
  local f = redis.call('HMGET', jk, 'state', 'worker_id', 'visibility_timeout_ms', 'execution_deadline')
  if f[1] == 'active' and f[2] == worker then
    local deadline = now + (tonumber(f[3] or '') or vis)
    local cap = tonumber(f[4] or '')
    if cap and cap < deadline then deadline = cap end
    redis.call('HSET', jk, 'visibility_deadline', deadline)
    redis.call('ZADD', prefix .. 'active', deadline, id)
    table.insert(extended, id)
  end
end
return extended
