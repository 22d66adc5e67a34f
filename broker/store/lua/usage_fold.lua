-- Folds a queue's usage journal into its decayed usage, totals and hourly
-- rollup (_lib_accounting.lua usage_fold): run before each read of them and by the
-- maintenance pass.
-- KEYS (5): 1 usage journal, 2 usage hash, 3 totals, 4 hourly rollup, 5 config
--           (keys.hpp usage_fold_keys)
-- ARGV: 1 the most lines to fold in this call
-- Reply: the lines folded (fewer than ARGV[1]: the journal is empty now)
return usage_fold({journal = KEYS[1], usage = KEYS[2], totals = KEYS[3], hours = KEYS[4], config = KEYS[5]},
                  tonumber(ARGV[1]))
