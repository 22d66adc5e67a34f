// Reads the per-queue event streams that the transition scripts append to
// (job.enqueued, job.started, job.completed, job.retrying, job.discarded, ...).
#pragma once
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"

namespace ojs::broker {

struct EventQuery {
  std::set<std::string> types;   // empty: all
  std::vector<std::string> queues;  // empty: all known queues
  std::string job_id;            // empty: all jobs
  int limit = 100;
};

// Newest first.
std::vector<nlohmann::json> list_events(JobStore& store, const EventQuery& query);

}  // namespace ojs::broker
