// Why jobs wait. Each FETCH records, per requirement class the worker could not
// take, that worker's judgement (by predicate, with numbers); INFO of a waiting
// job and the queue diagnosis endpoint fold the recent records into a summary
// ("0/12 workers: 8 have < 80 GB per GPU, 4 lack label region=us-east-1").
// Writes are throttled per (queue, class, worker) so FETCH stays cheap.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "broker/store/diagnosis_store.hpp"
#include "broker/store/job_store.hpp"
#include "ojs/core/fibers.hpp"
#include "ojs/ml/diagnosis.hpp"

namespace ojs::broker {

class DiagnosisLog {
 public:
  static constexpr std::int64_t kRefreshMs = 5000;  // an unchanged judgement is rewritten this often

  explicit DiagnosisLog(DiagnosisStore store, std::int64_t window_ms = 120000) : store_(store), window_ms_(window_ms) {}

  // Queue the record of one worker's judgement of one class; flush() writes them.
  void note(const std::string& queue, const std::string& class_id, const std::string& worker_id,
            const ml::Judgement& judgement);
  // One refusal as the worker's whole judgement of the class: what the claim answered
  // (budget, rate limit, backfill window: claim_refusals.hpp).
  void note_refusal(const std::string& queue, const std::string& class_id, const std::string& worker_id, ml::Refusal refusal);
  void flush();  // one pipelined write of what changed (called at the end of a FETCH)

  // Recent judgements of a class (younger than the window).
  std::vector<ml::WorkerJudgement> recent(const std::string& queue, const std::string& class_id);
  // How far back recent() looks. The summary of a class is the pipeline's
  // (diagnosis_review.hpp): it applies liveness and holds first.
  std::int64_t window_ms() const { return window_ms_; }

 private:
  struct Pending {
    std::string key, worker, value;
  };
  DiagnosisStore store_;
  std::int64_t window_ms_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::pair<std::int64_t, std::string>> last_written_;  // key -> (ms, value)
  static fibers::Local<std::vector<Pending>> pending_;  // per request (per fiber, or thread)
};

}  // namespace ojs::broker
