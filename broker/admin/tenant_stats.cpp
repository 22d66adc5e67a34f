#include "broker/admin/tenant_stats.hpp"

#include "broker/store/job_index_store.hpp"

namespace ojs::broker::admin {

using nlohmann::json;

namespace {
constexpr const char* kStates[] = {"available", "active", "scheduled", "retryable", "dead"};
}  // namespace

TenantScan scan_tenants(TenantScanSources& s, QueueService& queues) {
  TenantScan out;
  JobIndexStore& index = s.index;
  for (const auto& queue : queues.names()) {
    const std::vector<std::vector<std::string>> lists = {index.available(queue, s.queues.load_classes(queue), kScanPerIndex),
                                                         index.active(queue, kScanPerIndex), index.delayed(queue, kScanPerIndex),
                                                         index.dead(queue, kScanPerIndex)};
    std::vector<std::string> wanted;
    for (std::size_t l = 0; l < lists.size(); ++l) {
      if (static_cast<int>(lists[l].size()) >= kScanPerIndex) out.truncated = true;
      wanted.insert(wanted.end(), lists[l].begin(), lists[l].end());
    }
    std::size_t list = 0, left = lists.empty() ? 0 : lists[0].size();
    for (const auto& record : index.states_and_tenants(queue, wanted)) {  // two fields, not the whole hash
      while (left == 0 && list + 1 < lists.size()) left = lists[++list].size();
      --left;
      if (!record) continue;
      // The dead letter index holds discarded jobs: counted as dead whatever their state.
      const std::string state = list == 3 ? "dead" : record->state;
      auto& counts = out.tenants[record->tenant];
      ++counts.jobs[state];
      ++counts.queues[queue][state];
    }
  }
  return out;
}

json tenant_json(const std::string& tenant, const TenantCounts& counts) {
  json jobs = json::object();
  long long total = 0;  // ext-multi-tenancy's total_jobs: the jobs counted in every state
  for (const char* s : kStates) {
    const long long n = counts.jobs.count(s) ? counts.jobs.at(s) : 0;
    jobs[s] = n;
    total += n;
  }
  json queues = json::object();
  for (const auto& [queue, by_state] : counts.queues) queues[queue] = by_state;
  return {{"tenant_id", tenant}, {"jobs", jobs}, {"total_jobs", total}, {"queues", queues}};
}

}  // namespace ojs::broker::admin
