// Per-tenant statistics for admins (ojs-multi-tenancy.md §10.1-10.2, MT-005):
// GET /ojs/v1/admin/tenants and /ojs/v1/admin/tenants/{id}/stats. A job's tenant
// is its `tenant` field (meta.tenant_id, X-OJS-Tenant or a pinned token). Counts
// come from the indexes the state machine keeps (available, active, scheduled,
// retryable, dead letter), read up to kScanPerIndex jobs per index and queue; a
// tenant's GPU quota and use per queue come from the queue's tenant quotas and
// ledger. Completed, cancelled and discarded jobs are not indexed, so not counted.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "broker/admin/sources.hpp"
#include "broker/jobs/queue_service.hpp"

namespace ojs::broker::admin {

inline constexpr int kScanPerIndex = 10000;  // bounds one request's reads; `truncated` says when it was reached

struct TenantCounts {
  std::map<std::string, long long> jobs;                          // state -> count
  std::map<std::string, std::map<std::string, long long>> queues;  // queue -> state -> count
};

struct TenantScan {
  std::map<std::string, TenantCounts> tenants;  // "" = jobs without a tenant
  bool truncated = false;
};

// Every queue's indexed jobs, counted by tenant and state.
TenantScan scan_tenants(TenantScanSources& s, QueueService& queues);

// {tenant_id, jobs{available, active, scheduled, retryable, dead}, queues{...}}
nlohmann::json tenant_json(const std::string& tenant, const TenantCounts& counts);

}  // namespace ojs::broker::admin
