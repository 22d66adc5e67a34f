#include "broker/scheduling/fetch_filters.hpp"

#include "broker/scheduling/capacity_guard_filter.hpp"

namespace ojs::broker {

std::vector<ClassVerdict> run_fetch_filters(JobReads& reads, PreemptionStore& marks, const Scheduler& scheduler,
                                            const std::string& queue, const ClassSet& classes, const WorkerView& worker,
                                            const ml::AssignmentOptions& assignment, CapacityGuards* guards_read) {
  auto verdicts = scheduler.judge(classes, worker);  // ML predicates, locality hold, scores
  auto guards = read_capacity_guards(reads, marks, worker);
  apply_capacity_guards(guards, scheduler, queue, classes, worker, verdicts, assignment);
  if (guards_read) *guards_read = std::move(guards);
  return verdicts;
}

}  // namespace ojs::broker
