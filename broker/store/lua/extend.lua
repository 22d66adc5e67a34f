-- BEAT: extend the visibility deadline of jobs this worker still holds.
-- ARGV: prefix, worker_id, visibility_ms, ids...
local prefix, worker, vis = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = now_ms()
local extended = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local jk = job_key(prefix, id)
  local f = redis.call('HMGET', jk, 'state', 'worker_id')
  if f[1] == 'active' and f[2] == worker then
    extend_visibility(jk, prefix .. 'active', id, now, vis)  -- ecosystem: shared with progress.lua
    table.insert(extended, id)
  end
end
return extended
