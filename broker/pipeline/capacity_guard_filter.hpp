// Filter plugins over the worker's guard marks (read with its contact): refuses,
// with named reasons, classes a worker may not take because of a capacity hold
// (GPUs freed by preemption, kept for the preemptor: `capacity_hold`, held), a
// reservation (`reservation`: a job naming one runs only inside it, unresolvable
// outside; others may not use the GPUs it holds, held) or a backfill window
// (`backfill`, held); the preemptor's own class on the held worker reads
// `preemption_pending` (preemptible) while its victims run out their grace period.
// Eligible verdicts whose device assignment changes get the new devices.
#pragma once
#include <string>
#include <vector>

#include "broker/scheduling/scheduler.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/preemption_store.hpp"
#include "ojs/ml/device_assignment.hpp"

namespace ojs::broker {

void apply_capacity_guards(JobReads& reads, PreemptionStore& marks, const Scheduler& scheduler, const std::string& queue,
                           const ClassSet& classes, const WorkerView& worker, std::vector<ClassVerdict>& verdicts,
                           const ml::AssignmentOptions& assignment);

}  // namespace ojs::broker
