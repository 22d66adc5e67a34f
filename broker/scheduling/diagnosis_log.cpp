#include "broker/scheduling/diagnosis_log.hpp"

#include <nlohmann/json.hpp>

#include "ojs/core/time.hpp"
#include "ojs/ml/device_assignment.hpp"
#include "ojs/ml/types.hpp"

namespace ojs::broker {

thread_local std::vector<DiagnosisLog::Pending> DiagnosisLog::pending_;

namespace {

constexpr std::int64_t kRewriteAfterMs = 5000;  // an unchanged judgement is refreshed this often

ml::Judgement judgement_from_json(const nlohmann::json& j) {
  ml::Judgement out;
  if (!j.contains("refusals")) return out;
  for (const auto& r : j["refusals"]) {
    ml::Refusal refusal;
    refusal.predicate = r.value("predicate", "");
    refusal.reason = r.value("reason", "");
    refusal.summary = r.value("summary", "");
    if (r.contains("facts") && r["facts"].is_object())
      for (auto it = r["facts"].begin(); it != r["facts"].end(); ++it) {
        if (it.value().is_number()) refusal.facts.emplace_back(it.key(), it.value().get<double>());
        else if (it.value().is_string()) refusal.facts.emplace_back(it.key(), it.value().get<std::string>());
      }
    out.refusals.push_back(std::move(refusal));
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
  const std::string key = DiagnosisStore::record_key(queue, class_id);
  const std::string memo = key + '|' + worker_id;
  const auto now = now_ms();
  {
    std::lock_guard lock(mutex_);
    auto it = last_written_.find(memo);
    if (it != last_written_.end() && it->second.second == verdict && now - it->second.first < kRewriteAfterMs) return;
    if (last_written_.size() > 100000) last_written_.clear();
    last_written_[memo] = {now, verdict};
  }
  nlohmann::json j = ml::to_json(judgement);
  j["at"] = now;
  pending_.push_back({key, worker_id, j.dump()});
}

void DiagnosisLog::note_budget(const std::string& queue, const BudgetBlock& block, const std::string& worker_id) {
  ml::Judgement j;
  ml::Refusal r;
  r.predicate = "budget";
  const bool tenant = block.kind.rfind("tenant_quota:", 0) == 0;  // per-tenant quota (tenant_quota:<name>)
  const bool memory = block.kind == "max_total_gpu_memory_gb";  // in_use and limit come in MB
  const std::string what = block.kind == "max_total_gpus" || tenant ? " GPUs in use"
                           : memory                                 ? " GB of GPU memory in use"
                                                                    : " GPU jobs running";
  const auto amount = [&](long long n) { return memory ? ml::format_number(ml::gpu_memory_gb(n)) : std::to_string(n); };
  r.summary = (tenant ? "tenant " + block.kind.substr(13) + " quota " : std::string("queue budget ")) + amount(block.in_use) +
              "/" + amount(block.limit) + what;
  r.reason = r.summary + " (" + block.kind + ")";
  const double scale = memory ? 1000.0 : 1.0;
  r.facts = {{"in_use", static_cast<double>(block.in_use) / scale},
             {"limit", static_cast<double>(block.limit) / scale},
             {"limit_name", block.kind}};
  j.refusals.push_back(std::move(r));
  note(queue, block.class_id, worker_id, j);
}

void DiagnosisLog::note_rate_limit(const std::string& queue, const std::string& class_id, const std::string& worker_id,
                                   const std::string& kind) {
  ml::Refusal r;
  r.predicate = "rate_limit";
  const bool concurrency = kind == "concurrency";
  r.summary = concurrency ? "queue rate limit: as many jobs run as rate_limit.concurrency allows"
                          : "queue rate limit: rate_limit.rate allows no more starts in this period";
  r.reason = r.summary + " (" + kind + ")";
  r.facts = {{"limit_name", concurrency ? std::string("rate_limit.concurrency") : std::string("rate_limit.rate")}};
  ml::Judgement j;
  j.refusals.push_back(std::move(r));
  note(queue, class_id, worker_id, j);
}

void DiagnosisLog::flush() {
  if (pending_.empty()) return;
  std::vector<DiagnosisStore::Record> records;
  for (auto& p : pending_) records.push_back({std::move(p.key), std::move(p.worker), std::move(p.value)});
  pending_.clear();
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

nlohmann::json DiagnosisLog::summary(const std::string& queue, const std::string& class_id) {
  const auto records = recent(queue, class_id);
  nlohmann::json s = ml::diagnose(records);
  s["class"] = class_id;
  if (records.empty()) s["message"] = "no worker has polled this queue in the last " + std::to_string(window_ms_ / 1000) + " s";
  return s;
}

}  // namespace ojs::broker
