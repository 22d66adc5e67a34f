-- BEAT: extend the visibility deadline of jobs this worker still holds.
-- KEYS (1 + n): 1 active, then the job hash of each id (in ARGV order)
-- ARGV: worker_id, visibility_ms, then the n job ids
-- Reply: the ids extended
local worker, vis = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local extended = {}
for i = 3, #ARGV do
  local id, jk = ARGV[i], KEYS[i - 1]
  local f = redis.call('HMGET', jk, 'state', 'worker_id', 'gang_workers')
  if f[1] == 'active' and held_by({worker_id = f[2], gang_workers = f[3] or nil}, worker) then  -- any member
    extend_visibility(jk, KEYS[1], id, now, vis)  -- the rule shared with progress.lua (_lib_jobs.lua)
    extended[#extended + 1] = id
  end
end
return extended
