#include "broker/jobs/gang_view.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

std::optional<GangSizes> gang_sizes(const JobRecord& job) {
  const auto min_size = job.get_int("gang_size");
  if (!min_size || *min_size <= 0) return std::nullopt;
  GangSizes g;
  g.min_size = static_cast<int>(*min_size);
  g.max_size = static_cast<int>(std::max(*min_size, job.get_int("gang_max_size").value_or(*min_size)));
  g.workers = job.gang_workers();
  g.size = static_cast<int>(g.workers.size());
  if (job.state() == "active") g.generation = static_cast<int>(std::max<std::int64_t>(1, job.get_int("gang_generation").value_or(1)));
  return g;
}

json gang_sizes_json(const GangSizes& g) {
  return {{"min_size", g.min_size}, {"max_size", g.max_size}, {"elastic", g.elastic()}, {"size", g.size}, {"generation", g.generation}};
}

std::string gang_start_text(const GangSizes& g) {
  if (!g.elastic()) return "starts once all " + std::to_string(g.min_size) + " members are placed";
  return "starts once " + std::to_string(g.min_size) + " members are placed (min_size); may grow to " + std::to_string(g.max_size) +
         " (max_size) while it runs";
}

std::string gang_running_text(const GangSizes& g) {
  if (!g.elastic()) return "runs as " + std::to_string(g.size) + " members";
  return "runs at " + std::to_string(g.size) + " of up to " + std::to_string(g.max_size) + " members (generation " +
         std::to_string(g.generation) + ")";
}

namespace {

// What a running elastic gang's growth waits on, from its class's summary.
std::pair<std::string, std::string> grow_wait(const GangSizes& g, const json& summary) {
  if (g.size >= g.max_size) return {"at_max_size", "it grows no more"};
  const auto seen = summary.value("workers_seen", 0);
  const auto eligible = summary.value("eligible", 0);
  if (seen == 0) return {"no_worker_seen", "it grows when an eligible worker fetches; none has polled the queue lately"};
  if (eligible == 0)
    return {"no_eligible_worker", "it grows when a worker that fits a member frees (" + summary.value("message", std::string()) + ")"};
  return {"work_ahead", std::to_string(eligible) + " of " + std::to_string(seen) +
                            " workers fit a member, but the scheduler gives them to work ahead of it in the queue's order "
                            "(a higher-priority job, or a gang forming)"};
}

}  // namespace

json gang_diagnosis(const GangSizes& g, bool running, const json& class_summary, const std::optional<GrowthNext>& next) {
  json out = gang_sizes_json(g);
  if (!running) {
    out["message"] = (g.elastic() ? "an elastic gang: it " : "a gang: it ") + gang_start_text(g);
    return out;
  }
  std::string message = gang_running_text(g);
  if (g.elastic()) {
    auto [code, why] = grow_wait(g, class_summary);
    out["grow_waits_on"] = code;
    message += "; " + why;
    if (next && code == "no_eligible_worker") {
      const auto at = format_rfc3339(next->at_ms);
      out["grows_next"] = {{"worker_id", next->worker_id}, {"job_id", next->job_id}, {"at", at}};
      message += "; the first expected to free: worker " + next->worker_id + " at " + at + " (job " + next->job_id + "'s declared end)";
    }
  }
  out["message"] = std::move(message);
  return out;
}

}  // namespace ojs::broker
