#include "broker/jobs/fetch_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>
#include <unordered_map>

#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/affinity.hpp"
#include "ojs/ml/worker_load.hpp"
#include "broker/preemption/preemption.hpp"
#include "broker/scheduling/backfill_guard.hpp"
#include "broker/scheduling/claim_refusals.hpp"
#include "broker/scheduling/fetch_filters.hpp"
#include "broker/store/priority_score.hpp"

namespace ojs::broker {

using nlohmann::json;

std::shared_ptr<const FetchService::KeptClasses> FetchService::classes_of(const std::string& queue, bool refresh) {
  if (!refresh) {
    std::lock_guard lock(classes_mutex_);
    auto it = classes_cache_.find(queue);
    if (it != classes_cache_.end()) return it->second;
  }
  auto fresh = std::make_shared<KeptClasses>();
  fresh->all = queues_.load_classes(queue);
  fresh->gangs.version = fresh->all.version;
  for (const auto& [id, canonical] : fresh->all.classes)
    if (is_gang_class(scheduler_, fresh->all, id)) fresh->gangs.classes.emplace(id, canonical);
  // Bounded like the scheduler's memo: FETCH may name queues that do not exist
  // (those are not kept), and past the bound the cache starts over.
  constexpr std::size_t kMaxCachedQueues = 4096;
  if (fresh->all.classes.empty()) return fresh;
  std::lock_guard lock(classes_mutex_);
  if (classes_cache_.size() >= kMaxCachedQueues && !classes_cache_.count(queue)) classes_cache_.clear();
  return classes_cache_[queue] = std::move(fresh);
}

bool FetchService::full_judgement_due(const std::string& queue, const std::string& worker_id) {
  const auto now = now_ms();
  std::string key;
  key.reserve(queue.size() + worker_id.size() + 1);
  key.append(queue).append(1, '\n').append(worker_id);
  std::lock_guard lock(full_mutex_);
  if (last_full_judgement_.size() > 100000) last_full_judgement_.clear();
  auto [it, added] = last_full_judgement_.try_emplace(std::move(key), now);
  if (added) return true;
  if (now - it->second < DiagnosisLog::kRefreshMs) return false;
  it->second = now;
  return true;
}

bool FetchService::walk_classes(const std::string& queue, const KeptClasses& kept, const WorkerView& worker,
                                const std::set<std::string>& skip, std::vector<ClassVerdict>& out, ClaimSnapshot& snapshot,
                                std::optional<FirstPage> first_page) {
  const ClassSet& classes = kept.all;
  const double bound = scheduler_.bonus_bound(queue, classes, worker);
  std::optional<double> best_band;
  // Pages of the index grow 4x from 4 heads: most FETCHes stop in the first page, and
  // each head read costs Redis ~2.8k instructions (its score formatted as text).
  long long pos = 0, page = first_page ? first_page->count : kWalkFirstPage;
  while (true) {
    auto heads = pos == 0 && first_page ? std::move(first_page->snapshot) : claims_.class_heads(queue, pos, page);
    if (heads.fair) return false;
    if (pos == 0) {
      snapshot = heads;
    } else {
      snapshot.heads.insert(snapshot.heads.end(), heads.heads.begin(), heads.heads.end());
    }
    ClassSet judged{classes.version, {}};
    for (const auto& [id, score] : heads.heads) {
      auto it = classes.classes.find(id);  // a class newer than the kept set: the claim's version check refreshes it
      if (it != classes.classes.end() && !skip.count(id) && !kept.gangs.classes.count(id)) judged.classes.emplace(id, it->second);
    }
    auto verdicts = run_fetch_filters(reads_, marks_, scheduler_, queue, judged, worker, assignment_options(config_));
    std::unordered_map<std::string_view, ClassVerdict*> verdict_of;
    for (auto& v : verdicts) verdict_of.emplace(v.class_id, &v);
    for (const auto& [id, score] : heads.heads) {
      auto vit = verdict_of.find(id);
      if (vit == verdict_of.end()) continue;
      // The claim's order: band, then bonus, then the head's age. A later head of a
      // later band never wins over an eligible one; within the band, nothing behind a
      // class at the bound is preferred to it.
      const double band = std::floor(score / kScoreBand);
      if (best_band && band > *best_band) return true;
      ClassVerdict& v = *vit->second;
      const bool eligible = v.judgement.eligible();
      const bool unbeatable = eligible && v.claim.bonus >= bound && v.claim.backfill_before_ms == 0;
      if (eligible && !best_band) best_band = band;
      out.push_back(std::move(v));
      if (unbeatable) return true;
    }
    if (static_cast<long long>(heads.heads.size()) < page) return true;
    pos += page;
    page *= 4;
  }
}

FetchService::Outcome FetchService::fetch(const FetchRequest& request, const std::string& incarnation) {
  std::optional<pools::PoolFetchOrder::Plan> plan;
  if (!request.pool.empty()) {
    if (!pools_) throw OjsError(ErrorCode::not_found, "pool " + request.pool + " not found", {{"pool", request.pool}});
    plan = pools_->plan(request.pool, request.queues,
                        [this](const std::string& q) {
                          std::vector<std::string> ids;
                          for (const auto& [id, _] : classes_of(q, false)->all.classes) ids.push_back(id);
                          return ids;
                        });
  }
  // A capability FETCH's first claim snapshot rides in the contact's pipeline, when
  // it can serve: every head (a queue of few classes), or the walk's first page (a
  // queue walked in head order). A queue in between is judged whole, and its claim
  // reads the eligible classes' heads itself: a page read here would be read twice.
  std::optional<FirstPage> first_page;
  std::vector<std::vector<std::string>> riders;
  if (!plan && request.capabilities && !request.queues.empty()) {
    const auto kept = classes_of(request.queues.front(), false);
    const auto n = kept->all.classes.size();
    if (n > 0 && (n <= kWholeIndexClasses || n >= config_.fetch_walk_min_classes)) {
      first_page.emplace();
      first_page->complete = kept->all.classes.size() <= kWholeIndexClasses;
      first_page->count = first_page->complete ? static_cast<long long>(kWholeIndexClasses) : kWalkFirstPage;
      riders = ClaimStore::class_heads_reads(request.queues.front(), 0, first_page->count);
    }
  }
  auto contact = workers_.contact(request.worker_id, request.capabilities ? &request.capabilities_text : nullptr,
                                  plan ? plan->queues : request.queues, incarnation, std::nullopt, std::move(riders));
  if (first_page) first_page->snapshot = ClaimStore::class_heads_from(contact.rider_replies, 0);
  Outcome out{std::move(contact.state), {}, std::move(contact.held.preempting), {}, std::move(contact.held.gang_jobs)};
  if (out.state != "running") return out;  // a worker told to be quiet or to terminate gets no new work
  WorkerView worker;
  worker.worker_id = request.worker_id;
  if (request.capabilities) {
    auto [caps, fingerprint] = scheduler_.capabilities(*request.capabilities, &request.capabilities_text);
    worker.capabilities = std::move(caps);
    worker.fingerprint = std::move(fingerprint);
    worker.load = std::move(contact.held.load);
    worker.load.drain(contact.drained_devices);  // per-GPU drain: out of placement
  }
  worker.guards = std::move(contact.guards);
  if (plan) {
    fetch_from_pool(*plan, request, worker, out);
  } else {
    for (const auto& queue : request.queues) {
      if (static_cast<int>(out.jobs.size()) >= request.count) break;
      const auto before = out.jobs.size();
      fetch_from_queue(queue, request, worker, out.jobs, request.count, std::exchange(first_page, std::nullopt));
      if (out.jobs.size() > before) out.dispatched[queue] += static_cast<int>(out.jobs.size() - before);
    }
  }
  diagnosis_.flush();
  return out;
}

void FetchService::fetch_from_pool(const pools::PoolFetchOrder::Plan& plan, const FetchRequest& request, WorkerView& worker,
                                   Outcome& out) {
  const int wanted = plan.room ? static_cast<int>(std::min<long long>(request.count, *plan.room)) : request.count;
  std::vector<std::string> serving = plan.queues;  // a queue that gave nothing is left out of the next pass
  while (static_cast<int>(out.jobs.size()) < wanted && !serving.empty()) {
    std::vector<std::string> next;
    for (const auto& queue : serving) {
      if (static_cast<int>(out.jobs.size()) >= wanted) break;
      const auto before = out.jobs.size();
      fetch_from_queue(queue, request, worker, out.jobs, static_cast<int>(before) + 1);
      if (out.jobs.size() == before) continue;
      out.dispatched[queue] += static_cast<int>(out.jobs.size() - before);
      pools_->note_served(request.pool, queue);
      next.push_back(queue);
    }
    serving = std::move(next);
  }
}

void FetchService::fetch_from_queue(const std::string& queue, const FetchRequest& request, WorkerView& worker,
                                  std::vector<std::string>& jobs, int until, std::optional<FirstPage> first_page) {
  auto kept = classes_of(queue, false);
  fetch_gang(queue, *kept, request, worker, jobs);  // gang classes go to claim_gang only
  // The cached class set may predate a gang class: once it is refreshed below, a
  // gang class it did not have is offered to claim_gang in this same FETCH.
  const auto refreshed = [&](std::shared_ptr<const KeptClasses> fresh) {
    const bool new_gang = std::any_of(fresh->gangs.classes.begin(), fresh->gangs.classes.end(),
                                      [&](const auto& c) { return !kept->gangs.classes.count(c.first); });
    kept = std::move(fresh);
    if (new_gang && static_cast<int>(jobs.size()) < until) fetch_gang(queue, *kept, request, worker, jobs);
  };
  // A worker with capabilities claims one job at a time so that the GPUs and
  // devices of each claim are taken into account for the next.
  const bool one_by_one = worker.capabilities.has_value();
  // Many classes: judge them in the order of their heads, only as far as one may win,
  // so a FETCH's cost does not grow with the classes a worker could run. Every class
  // is judged when the walk cannot stand in for it: a plain worker (one claim for
  // `count` jobs), the diagnosis's refresh, or a claim of the walked classes that
  // came back empty (the claim refused what the walk offered: look at all).
  bool judge_all = !one_by_one || kept->all.classes.size() < config_.fetch_walk_min_classes ||
                   full_judgement_due(queue, worker.worker_id);
  std::set<std::string> given_back;  // classes of a job handed back by symmetric anti-affinity: not claimed again this FETCH
  for (int round = 0; round < 2 * until + 3 && static_cast<int>(jobs.size()) < until; ++round) {
    const ClassSet& classes = kept->all;
    const int want = one_by_one ? 1 : until - static_cast<int>(jobs.size());
    std::vector<EligibleClass> eligible;
    std::map<std::string, const ClassVerdict*> verdict_of;
    std::vector<ClassVerdict> verdicts;
    ClaimSnapshot snapshot;
    // The snapshot read with the contact serves the first round only: a claim moves the heads.
    std::optional<FirstPage> page = round == 0 ? std::exchange(first_page, std::nullopt) : std::nullopt;
    if (page && page->snapshot.classes_version != classes.version) page.reset();  // read against another class set
    // Every head, when the classes are judged whole (or the fair order, which the walk
    // cannot follow, decides): it stands for the claim's own read of the eligible heads.
    std::optional<ClaimSnapshot> whole;
    if (page && page->complete && (judge_all || page->snapshot.fair)) {
      whole = std::move(page->snapshot);
      page.reset();
    }
    const bool walked = !judge_all && walk_classes(queue, *kept, worker, given_back, verdicts, snapshot, std::move(page));
    if (!walked) verdicts = run_fetch_filters(reads_, marks_, scheduler_, queue, classes, worker, assignment_options(config_));
    for (const auto& v : verdicts) {
      verdict_of[v.class_id] = &v;
      const bool gang = kept->gangs.classes.count(v.class_id) > 0;
      if (gang && worker.capabilities) continue;  // fetch_gang judged and noted it, with claim_gang's answer
      if (v.judgement.eligible() && !gang && !given_back.count(v.class_id)) eligible.push_back(v.claim);
      diagnosis_.note(queue, v.class_id, worker.worker_id, v.judgement);
    }
    if (eligible.empty()) {
      // The cached class set may predate a class this worker could take (claim's
      // version check never runs when nothing is eligible): look once more.
      if (round > 0 || queues_.classes_version(queue) == classes.version) return;
      refreshed(classes_of(queue, true));
      continue;
    }
    const ClaimRequest claim{queue, worker.worker_id, request.visibility_timeout_ms, config_.default_visibility_timeout_ms,
                             want, classes.version, worker.capabilities.has_value()};
    if (!walked && whole) {  // only the eligible classes' heads, as the claim reads them (a fair queue reads candidates per head)
      std::set<std::string_view> ids;
      for (const auto& c : eligible) ids.insert(c.id);
      std::erase_if(whole->heads, [&](const auto& h) { return !ids.count(h.first); });
      snapshot = std::move(*whole);
    }
    auto outcome = claimer_.claim(claim, eligible, walked || whole ? &snapshot : nullptr);
    if (outcome.status == TransitionStatus::stale) {  // a class appeared since we looked
      refreshed(classes_of(queue, true));
      continue;
    }
    for (const auto& block : outcome.budget_blocked)
      diagnosis_.note_refusal(queue, block.class_id, worker.worker_id,
                              block.kind == "backfill" ? backfill_refusal(block.in_use, block.limit).refusals.front() : budget_refusal(block));
    if (outcome.jobs.empty() && !outcome.rate_limited.empty())  // why-waiting names the queue's rate limit
      for (const auto& c : eligible) diagnosis_.note_refusal(queue, c.id, worker.worker_id, rate_limit_refusal(outcome.rate_limited));
    if (outcome.jobs.empty() && walked && outcome.rate_limited.empty()) {
      judge_all = true;
      continue;
    }
    if (outcome.jobs.empty()) return;
    for (const auto& record : outcome.jobs) {
      if (worker.capabilities && excluded_by_running_job(record, worker.load)) {
        given_back.insert(record.get("class"));
        continue;
      }
      // The worker's load counts the job only for a claim still to come in this FETCH
      // (reading the job's labels and requirements is a fifth of a FETCH's work).
      const bool more_to_claim = static_cast<int>(jobs.size()) + 1 < until;
      if (worker.capabilities && more_to_claim) {
        const auto* v = verdict_of[record.get("class")];
        ml::ActiveJob active = ml::active_job_from(record.envelope(), record.held_gpus());
        const std::vector<int> devices = v ? v->judgement.devices : std::vector<int>{};
        worker.load.active.push_back(active);  // claim.lua listed it in the worker's held set
        worker.load.hold(devices, active.gpu_memory_gb);
      }
      jobs.push_back(record.envelope_text().str());  // the stored document is not parsed
    }
    if (!one_by_one) return;
  }
}

// Symmetric anti-affinity on what only the job knows (its type, id, meta.labels,
// tenant: the predicate judged its class on its ML attributes): a job a running job's
// anti-affinity excludes goes back at once, requeued without consuming the attempt.
bool FetchService::excluded_by_running_job(const JobRecord& record, const ml::WorkerLoad& load) {
  // Most workers run nothing with anti-affinity: then the job's labels are not read.
  if (std::none_of(load.active.begin(), load.active.end(), [](const ml::ActiveJob& a) { return !a.anti_affinity.empty(); }))
    return false;
  const auto ex = ml::excluded_by_running(load, ml::job_labels(record.envelope()), false);
  if (!ex) return false;
  const json error = {{"code", "anti_affinity"},
                      {"message", "worker runs job " + ex->job_id + " whose anti-affinity " + ml::describe(ex->rule) + " excludes this job"},
                      {"retryable", true}};
  try {
    jobs_.fail(record.id(), error, true, record.get("worker_id"));
    return true;
  } catch (const std::exception& e) {  // left with the worker rather than stranded until its visibility timeout
    spdlog::warn("job {}: handing it back for anti-affinity failed ({}); the worker keeps it", record.id(), e.what());
    return false;
  }
}

}  // namespace ojs::broker
