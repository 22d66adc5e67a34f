// Priority escalation: a job that waited escalation_after_s moves up to its
// target class (leader only).
#include <spdlog/spdlog.h>

#include "broker/preemption/preemption.hpp"
#include "broker/preemption/running_jobs.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

int target_rank(const ml::Scheduling& s, int from) {
  if (s.escalation_target_class) {
    switch (*s.escalation_target_class) {
      case ml::PriorityClass::spot: return 0;
      case ml::PriorityClass::reserved: return 2;
      default: return 1;
    }
  }
  return std::min(2, from + 1);
}

}  // namespace

int PreemptionController::escalate(const std::string& queue) {
  auto& indexes = marks_;
  int n = 0;
  for (const auto& id : indexes.due(queue, PreemptionStore::Index::escalations, now_ms())) {
    auto job = jobs_.get(queue, id);
    auto req = job ? requirements_of(*job) : std::nullopt;
    const bool waiting = job && (job->state() == "available" || job->state() == "scheduled" || job->state() == "retryable");
    const int from = job ? job->priority_class_rank() : 0;
    const int to = req ? target_rank(req->scheduling, from) : 0;
    if (!req || !waiting || from >= to) {
      indexes.drop(queue, PreemptionStore::Index::escalations, id);
      continue;
    }
    const int priority = job->priority();
    // Under `fair` the class orders too: the job moves to its tenant's slot of the new class.
    std::optional<double> order;
    if (const auto base = job->get_int("order_base")) order = fair_base_for_class(static_cast<double>(*base), to);
    if (indexes.escalate(*job, rank_base(to, priority), order, from, to)) {
      ++n;
      spdlog::info("queue {}: job {} escalated after waiting {} s", queue, id, req->scheduling.escalation_after_s.value_or(0));
    }
  }
  return n;
}

}  // namespace ojs::broker
