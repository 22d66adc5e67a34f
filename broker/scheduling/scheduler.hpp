// The bridge between the store and the matching library (ojs::ml): it files each
// pushed job into a requirement class and judges, for a fetching worker, which of
// a queue's classes it may take, how much it prefers each, and why it refuses
// the others. Static judgements are memoised per (class, capability fingerprint):
// FETCH cost grows with the number of live classes, never with queue depth.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/guard_marks.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/priority_score.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

struct JobClassification {
  std::string class_id;
  std::string class_json;
  double rank_base = 0;  // priority band; the store adds a sequence number
  ml::Requirements requirements;
};

// A fetching worker as the scheduler sees it.
struct WorkerView {
  std::string worker_id;
  std::optional<ml::Capabilities> capabilities;  // empty: a plain OJS worker
  std::string fingerprint;
  ml::WorkerLoad load;
  // The capacity hold on this worker and whether reservations exist (FETCH's capacity
  // guards), read with the worker's contact: once per FETCH, not per queue or round.
  GuardMarks guards;
};

struct ClassVerdict {
  std::string class_id;
  ml::Judgement judgement;   // refusals, or the devices to assign
  EligibleClass claim;       // meaningful when judgement.eligible()
};

struct SchedulerOptions {
  std::int64_t locality_delay_ms = 5000;
  ml::AssignmentOptions assignment;
  // The clock judge() reads, in ms since the epoch (the locality hold's cutoff, which
  // claim.lua compares with the jobs' enqueued_at, and how recently a better worker was
  // seen); empty: the wall clock. The cluster simulator gives its simulated clock, the
  // one its redis-server's TIME reads (bench/simulator/sim_clock.c).
  std::function<std::int64_t()> clock;
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options = {});
  ~Scheduler();
  // Validates the ext_ml_* attributes (throws OjsError naming the field) and files the job.
  JobClassification classify(const nlohmann::json& job_document, int priority) const;
  // The same from requirements already parsed (and so validated).
  JobClassification classify(ml::Requirements requirements, int priority) const;
  // One verdict per class of the queue (eligible or not, with reasons).
  std::vector<ClassVerdict> judge(const ClassSet& classes, const WorkerView& worker) const;
  // The highest bonus (soft score) a class of `classes` could offer this worker: the
  // largest static part (affinity + locality) among the classes it may take on its
  // hardware, plus the most packing adds. Kept per (queue, classes version,
  // capability fingerprint). A FETCH walking the class heads stops at a class that
  // reaches it: no class behind it can be preferred.
  double bonus_bound(const std::string& queue, const ClassSet& classes, const WorkerView& worker) const;
  // Parses a worker's advertisement (throws OjsError naming the field), memoised
  // on the raw body: a worker re-sends the same capabilities on every FETCH.
  // raw: the body as compact JSON text when the caller already has it (the memo's key).
  std::pair<ml::Capabilities, std::string> capabilities(const nlohmann::json& body, const std::string* raw = nullptr) const;
  // The requirements of a class id (parsed once from its canonical JSON).
  const ml::Requirements& requirements(const std::string& class_id, const std::string& class_json) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// rank_base (the band of the priority score) lives in broker/store/priority_score.hpp.
int priority_class_rank(const ml::Requirements& requirements);  // spot 0, on-demand 1 (default), reserved 2

}  // namespace ojs::broker
