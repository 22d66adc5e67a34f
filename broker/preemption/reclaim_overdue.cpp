// Preempted jobs whose worker did not release them by the deadline go back
// to their queue (every broker; fail.lua's compare-and-set makes it idempotent);
// members leaving an elastic gang leave it (gang_left.lua, idempotent too).
#include <spdlog/spdlog.h>

#include "broker/preemption/preemption.hpp"
#include "broker/preemption/running_jobs.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

int PreemptionController::reclaim_overdue(const std::string& queue) {
  auto& marks = marks_;
  int moved = 0;
  for (const auto& id : marks.due(queue, PreemptionStore::Index::preempting, now_ms())) {
    // A member told to leave an elastic gang (entry "job id TAB worker"): only it goes.
    if (const auto tab = id.find('\t'); tab != std::string::npos) {
      if (gangs_.member_left(queue, id.substr(0, tab), id.substr(tab + 1))) ++moved;
      continue;
    }
    auto job = jobs_.get(queue, id);
    if (!job || job->state() != "active" || !job->has("preempt_deadline")) {
      marks.drop(queue, PreemptionStore::Index::preempting, id);
      continue;
    }
    const json error = {{"code", "preempted"},
                        {"message", "worker " + job->get("worker_id") + " did not release the job within its preemption grace period"},
                        {"retryable", true}};
    try {
      requeue_(id, error);
      ++moved;
    } catch (const std::exception& e) {
      spdlog::debug("preempted job {} not reclaimed: {}", id, e.what());
    }
  }
  return moved;
}

}  // namespace ojs::broker
