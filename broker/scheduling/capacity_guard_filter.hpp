// Filter plugins over the worker's guard marks (read with its contact): refuses,
// with named reasons, classes a worker may not take because of a capacity hold
// (GPUs freed by preemption, kept for the preemptor: `capacity_hold`, held), a
// reservation (`reservation`: a job naming one runs only inside it, unresolvable
// outside; others may not use the GPUs it holds, held) or a backfill window
// (`backfill`, held); the preemptor's own class on the held worker reads
// `preemption_pending` (preemptible) while its victims run out their grace period.
// Eligible verdicts whose device assignment changes get the new devices.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/scheduling/capacity_hold.hpp"
#include "broker/scheduling/reservation.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/preemption_store.hpp"
#include "ojs/ml/device_assignment.hpp"

namespace ojs::broker {

// What the guards judge a worker by, read and checked: its capacity hold (a preemption
// hold, or a reservation's: backfill_start_ms), only while it lasts and its
// job still waits; the admin's reservations; the time they are judged at.
struct CapacityGuards {
  std::optional<CapacityHold> hold;
  std::map<std::string, Reservation> reservations;
  std::int64_t now_ms = 0;
};

// Reads them for a FETCH: the hold from the worker's contact (WorkerView::guards),
// voided once it lapsed or its job no longer waits; the reservations when any exist.
CapacityGuards read_capacity_guards(JobReads& reads, PreemptionStore& marks, const WorkerView& worker);

// The guards over marks already read (no Redis): what FETCH applies after reading
// them, and what the cluster simulator applies to the holds it keeps in memory.
void apply_capacity_guards(const CapacityGuards& guards, const Scheduler& scheduler, const std::string& queue,
                           const ClassSet& classes, const WorkerView& worker, std::vector<ClassVerdict>& verdicts,
                           const ml::AssignmentOptions& assignment);

}  // namespace ojs::broker
