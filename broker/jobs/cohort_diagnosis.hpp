// A job's place in its queue's cohort, for its diagnosis: the queue's share, and
// for a waiting job the reclaim under way (the borrowers of other members being
// preempted to give the share back, and when their grace ends); for a running job
// placed by borrowing, that it may be reclaimed.
#pragma once
#include <nlohmann/json.hpp>

#include "broker/store/cohort_store.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/job_record.hpp"
#include "broker/store/queue_directory.hpp"

namespace ojs::broker {

// null when the job's queue is in no cohort.
nlohmann::json cohort_diagnosis(JobReads& reads, QueueDirectory& queues, CohortStore& cohorts, const JobRecord& job);

}  // namespace ojs::broker
