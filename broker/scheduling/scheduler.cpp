#include "broker/scheduling/scheduler.hpp"

#include "ojs/ml/device_assignment.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include "broker/scheduling/locality_hold_filter.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/requirement_class.hpp"
#include "ojs/ml/scoring.hpp"

namespace ojs::broker {

namespace {
constexpr std::size_t kMemoLimit = 200000;  // judgements kept before the memo is reset
}

struct Scheduler::Impl {
  SchedulerOptions options;
  mutable std::shared_mutex mutex;
  mutable std::unordered_map<std::string, ml::Requirements> classes;        // class id -> requirements
  mutable std::unordered_map<std::string, ml::Judgement> static_memo;        // class id + fingerprint -> verdict
  // Per class, the best preference score (affinity + locality) a worker showed
  // recently: a worker that scores lower is held off for the delay window, so a
  // job that prefers nvlink goes to the nvlink worker when both poll.
  struct BestRecent {
    double preference = 0;
    std::string worker_id;
    std::int64_t at_ms = 0;
  };
  mutable std::mutex caps_mutex;
  mutable std::unordered_map<std::string, std::pair<ml::Capabilities, std::string>> caps_memo;  // body -> parsed, fingerprint
  mutable std::mutex bound_mutex;
  // queue|version|fingerprint -> one class of each (static score, GPU count) the worker may take
  mutable std::unordered_map<std::string, std::vector<const ml::Requirements*>> bound_kinds;
  mutable std::mutex best_mutex;
  mutable std::unordered_map<std::string, BestRecent> best_recent;

  // The better worker seen recently that this one should leave the class's jobs to, if any.
  std::optional<std::string> outscored(const std::string& class_id, const std::string& worker_id, double preference,
                                       std::int64_t now) const {
    std::lock_guard lock(best_mutex);
    auto& best = best_recent[class_id];
    const bool expired = now - best.at_ms > 2 * options.locality_delay_ms;
    if (expired || best.worker_id == worker_id || preference >= best.preference) {
      best = {preference, worker_id, now};
      return std::nullopt;
    }
    return best.worker_id;
  }
};

Scheduler::Scheduler(SchedulerOptions options) : impl_(std::make_unique<Impl>()) { impl_->options = options; }
Scheduler::~Scheduler() = default;

int priority_class_rank(const ml::Requirements& r) {
  if (!r.scheduling.priority_class) return 1;
  switch (*r.scheduling.priority_class) {
    case ml::PriorityClass::spot: return 0;
    case ml::PriorityClass::reserved: return 2;
    default: return 1;
  }
}

JobClassification Scheduler::classify(const nlohmann::json& job_document, int priority) const {
  return classify(ml::parse_requirements(job_document), priority);
}

JobClassification Scheduler::classify(ml::Requirements requirements, int priority) const {
  JobClassification c;
  c.requirements = std::move(requirements);
  const auto cls = ml::requirement_class(c.requirements);
  c.class_id = cls.id;
  c.class_json = cls.canonical;
  c.rank_base = rank_base(priority_class_rank(c.requirements), priority);
  return c;
}

std::pair<ml::Capabilities, std::string> Scheduler::capabilities(const nlohmann::json& body, const std::string* known_raw) const {
  std::string raw = known_raw ? *known_raw : body.dump();
  {
    std::lock_guard lock(impl_->caps_mutex);
    auto it = impl_->caps_memo.find(raw);
    if (it != impl_->caps_memo.end()) return it->second;
  }
  ml::Capabilities caps = ml::parse_capabilities(body);
  std::string fp = ml::fingerprint(caps);
  std::lock_guard lock(impl_->caps_mutex);
  if (impl_->caps_memo.size() > 10000) impl_->caps_memo.clear();
  return impl_->caps_memo.emplace(std::move(raw), std::make_pair(std::move(caps), std::move(fp))).first->second;
}

const ml::Requirements& Scheduler::requirements(const std::string& class_id, const std::string& class_json) const {
  {
    std::shared_lock lock(impl_->mutex);
    auto it = impl_->classes.find(class_id);
    if (it != impl_->classes.end()) return it->second;
  }
  ml::Requirements req = ml::requirements_from_class_json(nlohmann::json::parse(class_json));
  std::unique_lock lock(impl_->mutex);
  return impl_->classes.emplace(class_id, std::move(req)).first->second;
}

double Scheduler::bonus_bound(const std::string& queue, const ClassSet& classes, const WorkerView& worker) const {
  ml::ScoringOptions scoring;  // the weights the claim's scores use (judge below)
  scoring.explain = false;
  if (!worker.capabilities) return scoring.packing_weight;
  const auto& caps = *worker.capabilities;
  // One class of each (static score, GPU count) among those the worker's hardware
  // allows, found once per classes version and fingerprint; scored against this
  // FETCH's load (packing depends on its free GPUs).
  const std::string key = queue + '|' + classes.version + '|' + worker.fingerprint;
  std::vector<const ml::Requirements*> kinds;
  bool known = false;
  {
    std::lock_guard lock(impl_->bound_mutex);
    if (auto it = impl_->bound_kinds.find(key); it != impl_->bound_kinds.end()) kinds = it->second, known = true;
  }
  if (!known) {
    std::set<std::pair<double, int>> seen;
    for (const auto& [class_id, class_json] : classes.classes) {
      const ml::Requirements& req = requirements(class_id, class_json);
      if (req.hard.gang.size > 0 || !ml::judge_static(req, &caps).eligible()) continue;
      const auto s = ml::score(req, caps, nullptr, scoring);
      if (seen.emplace(s.affinity + s.locality, req.gpu_count()).second) kinds.push_back(&req);
    }
    std::lock_guard lock(impl_->bound_mutex);
    if (impl_->bound_kinds.size() > 10000) impl_->bound_kinds.clear();
    impl_->bound_kinds.emplace(key, kinds);
  }
  double bound = 0;
  for (const auto* req : kinds) bound = std::max(bound, ml::score(*req, caps, &worker.load, scoring).total);
  return bound;
}

std::vector<ClassVerdict> Scheduler::judge(const ClassSet& classes, const WorkerView& worker) const {
  std::vector<ClassVerdict> out;
  out.reserve(classes.classes.size());
  const ml::Capabilities* caps = worker.capabilities ? &*worker.capabilities : nullptr;
  const std::int64_t now = impl_->options.clock ? impl_->options.clock() : now_ms();
  for (const auto& [class_id, class_json] : classes.classes) {
    const ml::Requirements& req = requirements(class_id, class_json);
    ClassVerdict v;
    v.class_id = class_id;
    // Static phase, memoised: depends only on the class and the capability fingerprint.
    const std::string memo_key = class_id + '|' + worker.fingerprint;
    std::optional<ml::Judgement> memo;
    {
      std::shared_lock lock(impl_->mutex);
      auto it = impl_->static_memo.find(memo_key);
      if (it != impl_->static_memo.end()) memo = it->second;
    }
    if (!memo) {
      memo = ml::judge_static(req, caps);
      std::unique_lock lock(impl_->mutex);
      if (impl_->static_memo.size() > kMemoLimit) impl_->static_memo.clear();
      impl_->static_memo.emplace(memo_key, *memo);
    }
    if (!memo->eligible()) {
      v.judgement = std::move(*memo);
      out.push_back(std::move(v));
      continue;
    }
    // Dynamic phase: free GPUs / devices and anti-affinity against what runs there now.
    v.judgement = ml::judge_dynamic(req, caps, worker.load, impl_->options.assignment);
    if (v.judgement.eligible()) {
      v.claim.id = class_id;
      v.claim.gpus = req.gpu_count();
      v.claim.tpu_chips = req.hard.tpu.chip_count;  // what a TPU-chip budget charges (max_total_tpu_chips)
      if (!v.judgement.devices.empty()) v.claim.devices_json = nlohmann::json(v.judgement.devices).dump();
      if (v.claim.gpus > 0)  // what a GPU-memory budget charges (max_total_gpu_memory_gb)
        v.claim.gpu_memory_mb = ml::gpu_memory_charge_mb(caps ? caps->devices : std::vector<ml::GpuDevice>{}, v.judgement.devices,
                                                         req.hard.gpu.memory_gb, v.claim.gpus);
      ml::ScoringOptions scoring;
      scoring.locality_delay_ms = impl_->options.locality_delay_ms;
      scoring.explain = false;  // the claim reads the numbers only
      double preference = 0;
      if (caps) {
        const auto s = ml::score(req, *caps, &worker.load, scoring);
        v.claim.bonus = s.total;
        preference = s.affinity + s.locality;
      }
      // Delay scheduling (bounded, never forever): a class that prefers a model this
      // worker lacks, or that a recently seen worker suits better, only gives this
      // worker jobs that already waited the locality delay.
      // The locality hold (scheduling/locality_hold_filter.hpp): held, per job.
      const bool cold = !req.soft.locality_model_id.empty() && ml::locality_hold(req, caps, 0, scoring);
      std::optional<std::string> better;
      if (!req.soft.empty()) better = impl_->outscored(class_id, worker.worker_id, preference, now);
      if (cold || better) {
        v.claim.hold_enqueued_after_ms = now - impl_->options.locality_delay_ms;
        v.judgement.holds.push_back(locality_hold_refusal(req.soft.locality_model_id, cold, better.value_or(std::string()),
                                                          impl_->options.locality_delay_ms, now));
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace ojs::broker
