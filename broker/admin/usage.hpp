// GET /ojs/v1/admin/usage: resource-seconds per tenant, queue,
// job type or worker over a time range, from the per-hour rollup the scripts keep
// (store/usage_store.hpp), and the trim of that rollup to its retention.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/admin/sources.hpp"

namespace ojs::broker::admin {

// "tenant" | "queue" | "type" | "worker": what a usage report groups by.
bool is_usage_grouping(const std::string& by);
inline constexpr const char* kUsageGroupingRule = "must be one of tenant, queue, type, worker";

// {from, to, by, rows: [{<by>: key, <resource>_seconds..., microseconds: {<resource>: n}}]}
// over the hours that overlap [from_ms, to_ms] (whole hours: the rollup's grain),
// rows sorted by key; a tenant "" is the jobs without one.
nlohmann::json usage_report(UsageSources& s, const std::vector<std::string>& queues, const std::string& by,
                            std::int64_t from_ms, std::int64_t to_ms);

// Settles every queue's journal (settle.lua: the usage fold, the ACKs' completions;
// the maintenance pass: it keeps the journal short between reads, which settle it
// themselves).
void settle_ends(UsageSources& s);

// Drops the rollup hours older than `retention_hours`, for every queue (the maintenance pass).
void trim_usage(UsageSources& s, std::int64_t retention_hours);

}  // namespace ojs::broker::admin
