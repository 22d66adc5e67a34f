-- Background promoter: due scheduled jobs and retries become available.
-- ARGV: prefix
return promote_due(ARGV[1], now_ms(), 1000)
