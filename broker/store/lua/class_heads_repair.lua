-- Makes a queue's class-head index match its ready sets: after an upgrade
-- from a broker that kept no index (its queued jobs would be invisible to claim),
-- and as the maintenance loop's periodic check. Atomic, so it may run beside claims.
-- KEYS (3): 1 classes hash, 2 ready prefix (+ a class id read from 1), 3 class heads
-- ARGV: (none)
-- Reply: the number of index entries it corrected (0 when the index was right)
local fixed = 0
for _, class in ipairs(redis.call('HKEYS', KEYS[1])) do
  if is_class_field(class) then  -- not a job count
    local listed = redis.call('ZSCORE', KEYS[3], class) or nil  -- a missing entry reads as false, not nil
    local head = head_refresh(KEYS[3], KEYS[2] .. class, class)  -- _lib.lua: the one rule for an index entry
    if (head and head[2]) ~= listed then fixed = fixed + 1 end
  end
end
return fixed
