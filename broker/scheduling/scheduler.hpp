// The bridge between the store and the matching library (ojs::ml): it files each
// pushed job into a requirement class and tells, for a fetching worker, which of
// a queue's classes it may take and how much it prefers each.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"

namespace ojs::broker {

struct JobClassification {
  std::string class_id;
  std::string class_json;
  double rank_base = 0;  // priority band; the store adds a sequence number
};

// What a worker told us in FETCH (capabilities may be absent: a plain OJS worker).
struct WorkerView {
  std::string worker_id;
  const nlohmann::json* capabilities = nullptr;
};

class Scheduler {
 public:
  Scheduler();
  ~Scheduler();
  // Validates the ext_ml_* attributes (throws OjsError) and files the job.
  JobClassification classify(const nlohmann::json& job_document, int priority) const;
  std::vector<EligibleClass> eligible(const std::string& queue, const ClassSet& classes, const WorkerView& worker) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// rank = band * 2^40 + seq: higher priority class, then higher OJS priority, first.
double rank_base(int priority_class_rank, int priority);

}  // namespace ojs::broker
