-- Read only: the rendezvous of the running gangs a worker is a member of, for its
-- heartbeat reply, so that each member of an elastic gang learns a resize
-- (docs/matching.md "Elastic gangs"). Jobs that are not active gangs holding this
-- worker are left out.
-- KEYS (n): the job hash of each id (in ARGV order)
-- ARGV: worker_id, then the n job ids
-- Reply: a list of {job id, gang_generation ('' = none), gang_members JSON}
local worker = ARGV[1]
local out = {}
for i = 2, #ARGV do
  local f = redis.call('HMGET', KEYS[i - 1], 'state', 'gang_workers', 'gang_generation', 'gang_members')
  if f[1] == 'active' and f[2] and gang_rank({gang_workers = f[2]}, worker) then
    out[#out + 1] = {ARGV[i], f[3] or '', f[4] or ''}
  end
end
return out
