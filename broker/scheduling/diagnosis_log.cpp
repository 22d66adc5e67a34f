#include "broker/scheduling/diagnosis_log.hpp"

#include <nlohmann/json.hpp>
#include <string_view>

#include "ojs/core/time.hpp"

namespace ojs::broker {

fibers::Local<std::vector<DiagnosisLog::Pending>> DiagnosisLog::pending_;

namespace {


ml::Judgement judgement_from_json(const nlohmann::json& j) {
  ml::Judgement out;
  for (const char* list : {"refusals", "holds"}) {
    if (!j.contains(list) || !j[list].is_array()) continue;
    auto& into = std::string_view(list) == "holds" ? out.holds : out.refusals;
    for (const auto& r : j[list]) into.push_back(ml::refusal_from_json(r));
  }
  return out;
}

}  // namespace

void DiagnosisLog::note(const std::string& queue, const std::string& class_id, const std::string& worker_id,
                        const ml::Judgement& judgement) {
  // The throttle compares a cheap signature (the refusal reasons); the JSON is
  // only built when the record is actually written.
  std::string verdict;
  for (const auto& r : judgement.refusals) verdict.append(r.predicate).append(":").append(r.reason).append(";");
  for (const auto& r : judgement.holds) verdict.append("hold:").append(r.predicate).append(":").append(r.reason).append(";");
  std::string memo;  // queue, class, worker: the throttle's key (the Redis key is built only to write)
  memo.reserve(queue.size() + class_id.size() + worker_id.size() + 2);
  memo.append(queue).append(1, '\n').append(class_id).append(1, '\n').append(worker_id);
  const auto now = now_ms();
  {
    std::lock_guard lock(mutex_);
    auto it = last_written_.find(memo);
    if (it != last_written_.end() && it->second.second == verdict && now - it->second.first < kRefreshMs) return;
    if (last_written_.size() > 100000) last_written_.clear();
    last_written_[memo] = {now, verdict};
  }
  nlohmann::json j = ml::to_json(judgement);
  j["at"] = now;
  pending_.get().push_back({DiagnosisStore::record_key(queue, class_id), worker_id, j.dump()});
}

void DiagnosisLog::note_refusal(const std::string& queue, const std::string& class_id, const std::string& worker_id,
                               ml::Refusal refusal) {
  ml::Judgement j;
  j.refusals.push_back(std::move(refusal));
  note(queue, class_id, worker_id, j);
}

void DiagnosisLog::flush() {
  auto& pending = pending_.get();
  if (pending.empty()) return;
  std::vector<DiagnosisStore::Record> records;
  for (auto& p : pending) records.push_back({std::move(p.key), std::move(p.worker), std::move(p.value)});
  pending.clear();
  store_.write(records, window_ms_ * 2);
}

std::vector<ml::WorkerJudgement> DiagnosisLog::recent(const std::string& queue, const std::string& class_id) {
  std::vector<ml::WorkerJudgement> out;
  const auto oldest = now_ms() - window_ms_;
  for (const auto& [worker, text] : store_.read(queue, class_id)) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || j.value("at", std::int64_t{0}) < oldest) continue;
    out.push_back({worker, judgement_from_json(j)});
  }
  return out;
}

}  // namespace ojs::broker
