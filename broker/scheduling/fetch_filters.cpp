#include "broker/scheduling/fetch_filters.hpp"

#include "broker/scheduling/capacity_guard_filter.hpp"

namespace ojs::broker {

std::vector<ClassVerdict> run_fetch_filters(JobReads& reads, PreemptionStore& marks, const Scheduler& scheduler,
                                            const std::string& queue, const ClassSet& classes, const WorkerView& worker,
                                            const ml::AssignmentOptions& assignment) {
  auto verdicts = scheduler.judge(classes, worker);  // ML predicates, locality hold, scores
  apply_capacity_guards(reads, marks, scheduler, queue, classes, worker, verdicts, assignment);
  return verdicts;
}

}  // namespace ojs::broker
