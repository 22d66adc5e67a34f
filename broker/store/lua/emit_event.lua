-- One event not written by a job transition (cron.triggered, cron.skipped,
-- cron.deferred), through _lib's emit so the stream's bound (--events) applies.
-- KEYS (1): 1 the queue's event stream
-- ARGV: 1 event type, 2 job id ('' = none), 3 queue, then extra field/value pairs
-- Reply: 1
local extra = {}
for i = 4, #ARGV do extra[#extra + 1] = ARGV[i] end
emit(KEYS[1], ARGV[1], {id = ARGV[2], queue = ARGV[3]}, extra)
return 1
