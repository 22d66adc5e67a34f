// Every consumer that asks "can this job start on this worker now?" gets
// the same answer. 1,000 seeded random cases (a worker shaped like one of
// examples/workers with random jobs already running on it, a random job), each
// judged as
//   - FETCH judges it: Scheduler::judge (the predicates, static then dynamic),
//   - the start estimate runs it: estimate::estimate_start starts it now,
//   - capacity preemption plans it: plan_capacity_preemption finds it fits as
//     things stand (nothing to preempt),
//   - backfill plans it: earliest_start is now,
//   - preemption's victim search: choose_victims has nothing to do,
// and the five verdicts must agree. The load each sees is built once, as the
// consumers build it from what runs (load_without). Left out on purpose: the
// locality delay (0 here: FETCH and the estimate each apply it, to the job's wait),
// gangs (their own path) and budgets (the commit checks them; queue_budget.cpp).
// A disagreement prints the case's seed, job and worker.
//
// Then the order: 1,000 seeded random queues (a few classes of several jobs, random
// priority bands, tenants, a GPU budget and tenant quotas partly used) waiting for
// one such worker. FETCH's decision (Scheduler::judge, then decide_claim over the
// snapshot claim.lua's reads give, reading past the heads when it asks) and the start
// estimate's forward run (estimate::forecast: its first placement, now) must start
// the same job, or both none. Both decide without the soft-score bonus
// (ClaimDecisionInput::by_bonus: the run decides before it judges a worker); the
// cases where the bonus would change FETCH's pick are counted. The same again for
// 1,000 queues under `policy: fair` (tenant slots, weights, either order, the
// tenants' decayed and held use): FETCH's decision over the candidates it lists and
// the use it reads, against the run's over its own listing of its jobs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "broker/estimate/forecast.hpp"
#include "broker/preemption/backfill.hpp"
#include "broker/preemption/capacity_plan.hpp"
#include "broker/preemption/victims.hpp"
#include "broker/scheduling/claim_decision.hpp"
#include "broker/scheduling/fair_order.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "broker/store/priority_score.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirement_class.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/worker_load.hpp"

using namespace ojs::broker;
using nlohmann::json;
namespace ml = ojs::ml;

namespace {

constexpr std::int64_t kNow = 1764000000000;

std::vector<json> example_workers() {
  std::vector<json> out;
  for (const auto& f : std::filesystem::directory_iterator(std::string(OJS_SOURCE_DIR) + "/examples/workers")) {
    std::ifstream in(f.path());
    out.push_back(json::parse(in));
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a.dump() < b.dump(); });  // the seed decides, not the directory
  return out;
}

template <class T>
const T& pick(std::mt19937& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}
bool chance(std::mt19937& rng, double p) { return std::bernoulli_distribution(p)(rng); }

// A job as a producer writes one: any mix of the hardware requirements the examples use.
json random_job(std::mt19937& rng, int n) {
  json j = {{"id", "job-" + std::to_string(n)}, {"type", "t"}, {"args", json::array()}};
  if (chance(rng, 0.1)) {
    j["ext_ml_accelerator"] = "tpu";
    j["ext_ml_tpu_chip_count"] = pick(rng, std::vector<int>{1, 4, 8});
  } else if (!chance(rng, 0.25)) {
    j["ext_ml_gpu_count"] = pick(rng, std::vector<int>{1, 1, 2, 4, 8});
    if (chance(rng, 0.4)) j["ext_ml_gpu_type"] = pick(rng, std::vector<std::string>{"nvidia-h100", "nvidia-a100", "nvidia-l4"});
    if (chance(rng, 0.4)) j["ext_ml_gpu_memory_gb"] = pick(rng, std::vector<int>{10, 24, 40, 80});
    if (chance(rng, 0.2)) j["ext_ml_gpu_compute_capability"] = pick(rng, std::vector<std::string>{"8.0", "8.9", "9.0"});
    if (chance(rng, 0.15)) j["ext_ml_gpu_interconnect"] = "nvlink";
  }
  if (chance(rng, 0.5)) j["ext_ml_cpu_cores"] = pick(rng, std::vector<int>{1, 4, 16, 48, 96});
  if (chance(rng, 0.4)) j["ext_ml_memory_gb"] = pick(rng, std::vector<int>{2, 32, 256, 1024});
  if (chance(rng, 0.15)) j["ext_ml_node_selector"] = {{"region", pick(rng, std::vector<std::string>{"us-east-1", "eu-west-1"})}};
  if (chance(rng, 0.1)) j["ext_ml_anti_affinity"] = {{"required", json::array({{{"key", "type"}, {"operator", "In"}, {"values", {"t"}}}})}};
  return j;
}

struct Case {
  json worker, job;
  ml::Capabilities caps;
  std::vector<RunningJob> running;
};

// What runs on the worker: random jobs started while they fitted, on the devices the
// predicates assigned them, as the broker records them.
Case random_case(std::mt19937& rng, const std::vector<json>& workers, int n) {
  Case c;
  c.worker = pick(rng, workers);
  c.caps = ml::parse_capabilities(c.worker);
  const int tries = std::uniform_int_distribution<int>(0, 4)(rng);
  for (int i = 0; i < tries; ++i) {
    const json doc = random_job(rng, 1000 * n + i);
    const auto req = ml::parse_requirements(doc);
    const auto j = ml::judge(req, &c.caps, load_without(c.running, {}), {});
    if (!j.eligible()) continue;
    const auto active = ml::active_job_from(doc, req.gpu_count());
    RunningJob r;
    r.job_id = active.job_id;
    r.gpus = active.gpus;
    r.labels = active.labels;
    r.anti_affinity = active.anti_affinity;
    r.gpu_memory_gb = active.gpu_memory_gb;
    r.cpu_cores = active.cpu_cores;
    r.memory_gb = active.memory_gb;
    r.tpu_chips = active.tpu_chips;
    r.devices = j.devices;
    r.class_rank = 1;
    c.running.push_back(std::move(r));
  }
  c.job = random_job(rng, n);
  return c;
}

struct Verdicts {
  bool fetch = false, estimate = false, capacity = false, backfill = false, victims = false;
  bool agree() const { return fetch == estimate && fetch == capacity && fetch == backfill && fetch == victims; }
};

Verdicts judge_everywhere(const Case& c) {
  Verdicts v;
  SchedulerOptions options;
  options.locality_delay_ms = 0;
  const Scheduler scheduler(options);
  const auto cls = scheduler.classify(c.job, 0);
  const ml::Requirements& req = scheduler.requirements(cls.class_id, cls.class_json);

  // FETCH.
  WorkerView worker;
  worker.worker_id = "w";
  worker.capabilities = c.caps;
  worker.fingerprint = ml::fingerprint(c.caps);
  worker.load = load_without(c.running, {});
  ClassSet classes;
  classes.classes[cls.class_id] = cls.class_json;
  const auto verdicts = scheduler.judge(classes, worker);
  v.fetch = verdicts.size() == 1 && verdicts[0].judgement.eligible();

  // The start estimate: the worker with what runs on it (never ending), the job waiting.
  estimate::Snapshot s;
  s.now_ms = kNow;
  s.preemption = false;
  s.scoring.locality_delay_ms = 0;
  estimate::Worker ew{"w", c.caps, {}, {}};
  for (const auto& r : c.running) ew.running.push_back({r, estimate::EndSource::unknown, false, "", std::nullopt});
  s.workers.push_back(std::move(ew));
  estimate::Waiting waiting;
  waiting.id = "target";
  waiting.class_id = cls.class_id;
  waiting.req = &req;
  waiting.enqueued_ms = kNow - 3600000;
  s.waiting.push_back(waiting);
  const auto e = estimate::estimate_start(s, "target");
  v.estimate = e.status == estimate::Estimate::Status::estimated && e.start_ms == kNow;

  // Capacity preemption's plan, backfill's earliest start, the victim search.
  const std::vector<PreemptionSite> sites{{&c.caps, {}}};
  v.capacity = plan_capacity_preemption(req, 2, sites, [&](std::size_t) { return c.running; }).fits_on.has_value();
  v.backfill = earliest_start(req, c.caps, c.running, kNow) == kNow;
  std::vector<RunningJob> preemptible = c.running;
  for (auto& r : preemptible) r.preemptible = true, r.class_rank = 0;
  const bool fits_without_all = ml::fits(req, &c.caps, load_without({}, {}), {});
  const auto victims = choose_victims(req, 2, c.caps, preemptible);
  // choose_victims answers nullopt when the job fits already, and when even removing
  // every candidate would not do: only the first is the verdict asked.
  v.victims = !victims && fits_without_all && ml::fits(req, &c.caps, load_without(preemptible, {}), {});
  return v;
}

}  // namespace

TEST(ConsumerVerdicts, FetchEstimatePreemptionAndBackfillAgreeOnAThousandCases) {
  const auto workers = example_workers();
  ASSERT_GE(workers.size(), 5u);
  int eligible = 0, refused = 0;
  for (int n = 0; n < 1000; ++n) {
    std::mt19937 rng(static_cast<std::uint32_t>(n));
    const Case c = random_case(rng, workers, n);
    const Verdicts v = judge_everywhere(c);
    ASSERT_TRUE(v.agree()) << "seed " << n << ": fetch " << v.fetch << ", estimate " << v.estimate << ", capacity plan "
                           << v.capacity << ", backfill " << v.backfill << ", victim search " << v.victims
                           << "\njob " << c.job.dump() << "\nrunning " << c.running.size() << " on worker " << c.worker.dump();
    (v.fetch ? eligible : refused) += 1;
  }
  // Both answers are well represented, or the cases test little.
  EXPECT_GE(eligible, 200);
  EXPECT_GE(refused, 200);
  std::printf("[ verdicts ] 1000 cases: %d start now everywhere, %d refused everywhere\n", eligible, refused);
}

namespace {

// A queue waiting for one worker: its classes' jobs, its budget and tenant quotas.
struct QueueCase {
  Case worker;  // the worker and what runs on it (its `job` unused)
  struct Job {
    std::string id, class_id, tenant;
    double score = 0;
  };
  std::vector<Job> jobs;                        // in score order
  std::map<std::string, std::string> classes;  // class id -> canonical JSON
  BudgetUse budget;
  TenantQuotaUse quotas;
  std::optional<FairUsage> fair;  // policy fair: the config's layout and the tenants' use as stored
};

// A fair layout (2 named tenants with weights, either order) and use for the queue's
// tenants, in the stored forms (queue_config.cpp fairness_for_claim, the usage hash's
// two values per name); each job is rescored into its class band and tenant slot.
void make_fair(std::mt19937& rng, QueueCase& q) {
  const std::map<std::string, int> slot{{"a", 1}, {"b", 2}};  // "c" and "" have no weight: slot 0
  const double wa = pick(rng, std::vector<double>{1, 2}), wb = pick(rng, std::vector<double>{1, 3});
  const json layout = {{"base", kFairBandBase},
                       {"slots", 3},
                       {"default_weight", 1},
                       {"tenants", {{"a", {1, wa}}, {"b", {2, wb}}}},
                       {"order", chance(rng, 0.3) ? "class" : "tenant"}};
  FairUsage fair;
  fair.layout_json = layout.dump();
  fair.half_life_ms = "3600000";
  double gpu_s = 0, held = 0;
  const std::string at = std::to_string(kNow - 1000);
  for (const std::string t : {"a", "b", "c"}) {
    if (!chance(rng, 0.7)) continue;
    const double used = std::uniform_int_distribution<int>(0, 20)(rng) * 600.0;  // decayed GPU-seconds
    const double now = std::uniform_int_distribution<int>(0, 4)(rng);           // GPUs held now
    gpu_s += used, held += now;
    fair.usage.push_back({t, at + " " + std::to_string(used) + " 0 0 0", std::to_string(now) + " 0 0 0 " + at + " 0 0"});
  }
  fair.usage.push_back({"*", at + " " + std::to_string(gpu_s) + " 0 0 0", std::to_string(held) + " 0 0 0 " + at + " 0 0"});
  q.fair = std::move(fair);
  for (auto& j : q.jobs) {
    const auto s = slot.find(j.tenant);
    const int rank = class_rank_of_score(j.score);  // the class the band was drawn for
    const long long seq = unpack_score(j.score).seq;
    // Now and then a job scored under an earlier policy: the claim serves those first.
    j.score = chance(rng, 0.05) ? j.score : pack_score(fair_band(rank, s == slot.end() ? 0 : s->second), seq);
  }
  std::sort(q.jobs.begin(), q.jobs.end(), [](const auto& a, const auto& b) { return a.score < b.score; });
}

QueueCase random_queue(std::mt19937& rng, const std::vector<json>& workers, const Scheduler& scheduler, int n, bool fair = false) {
  QueueCase q;
  q.worker = random_case(rng, workers, n);
  const std::vector<std::string> tenants{"", "a", "b", "c"};
  const int classes = std::uniform_int_distribution<int>(1, 5)(rng);
  long long seq = 0;
  for (int k = 0; k < classes; ++k) {
    const json doc = random_job(rng, 1000 * n + 100 + k);
    const auto cls = scheduler.classify(doc, 0);
    q.classes[cls.class_id] = cls.class_json;
    const int jobs = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int j = 0; j < jobs; ++j) {
      // Two priority classes and two priorities: bands shared across classes, as
      // where the bonus would order them.
      const double band = rank_base(pick(rng, std::vector<int>{1, 2}), pick(rng, std::vector<int>{0, 10}));
      seq += std::uniform_int_distribution<int>(1, 5)(rng);
      q.jobs.push_back({"q" + std::to_string(k) + "-" + std::to_string(j), cls.class_id, pick(rng, tenants), band + static_cast<double>(seq)});
    }
  }
  std::sort(q.jobs.begin(), q.jobs.end(), [](const auto& a, const auto& b) { return a.score < b.score; });
  if (chance(rng, 0.5)) {
    q.budget.max_gpus = std::uniform_int_distribution<int>(0, 16)(rng);
    q.budget.gpus_in_use = std::uniform_int_distribution<long long>(0, *q.budget.max_gpus)(rng);
  }
  if (chance(rng, 0.3)) {
    q.budget.max_jobs = std::uniform_int_distribution<int>(0, 4)(rng);
    q.budget.gpu_jobs = std::uniform_int_distribution<long long>(0, *q.budget.max_jobs)(rng);
  }
  if (chance(rng, 0.7)) {  // a quota often full: the pick passes its tenant's jobs
    for (const std::string t : {"a", "b", "*"})
      if (chance(rng, 0.7)) {
        q.quotas.limits[t] = std::uniform_int_distribution<int>(0, 8)(rng);
        q.quotas.used[t] = std::uniform_int_distribution<long long>(0, q.quotas.limits[t])(rng);
      }
  }
  if (fair) make_fair(rng, q);
  return q;
}

// The job FETCH's decision starts on the worker ("" = none), as the claimer decides
// it: the eligible verdicts, the classes' heads, then their first jobs when asked.
std::string fetch_pick(const QueueCase& q, const std::vector<ClassVerdict>& verdicts, bool by_bonus) {
  std::vector<EligibleClass> eligible;
  for (const auto& v : verdicts)
    if (v.judgement.eligible()) eligible.push_back(v.claim);
  ClaimSnapshot snap;
  snap.tenant_quotas = !q.quotas.limits.empty();
  snap.budget = q.budget;
  snap.now_ms = kNow;
  std::map<std::string, std::vector<const QueueCase::Job*>> by_class;  // each in score order
  for (const auto& j : q.jobs) by_class[j.class_id].push_back(&j);
  for (const auto& [id, jobs] : by_class) snap.heads.emplace_back(id, jobs.front()->score);
  std::sort(snap.heads.begin(), snap.heads.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  ClaimDecisionInput in{snap, eligible, 1, kNow};
  in.by_bonus = by_bonus;
  snap.fair = q.fair.has_value();
  ClaimPlan plan = decide_claim(in);
  FairDetail fair;
  if (plan.needs_fair) {  // what fair_candidates.lua answers: each class's candidates and the tenants' use
    static_cast<FairUsage&>(fair) = *q.fair;
    fair.quotas = q.quotas;
    const FairLayout layout = fair_layout_from(q.fair->layout_json);
    for (const auto& [id, jobs] : by_class) {
      const ReadyRange range = [&jobs](double low, double high, int n) {
        std::vector<FairCandidate> out;
        for (const auto* j : jobs)
          if (j->score >= low && j->score < high && static_cast<int>(out.size()) < n) out.push_back({0, 0, j->id, j->score, j->tenant, std::nullopt});
        return out;
      };
      fair.classes[id] = fair_candidates_of(range, layout, 1);
    }
    in.fair = &fair;
    plan = decide_claim(in);
  }
  ReadyDetail detail;
  if (!plan.needs_jobs.empty()) {
    detail.quotas = q.quotas;
    for (const auto& id : plan.needs_jobs)
      for (const auto* j : by_class[id])
        if (static_cast<int>(detail.jobs[id].size()) < plan.depth) detail.jobs[id].push_back({j->id, j->score, j->tenant, std::nullopt});
    in.detail = &detail;
    plan = decide_claim(in);
  }
  if (plan.picks.empty()) return "";
  const auto& p = plan.picks.front();
  return p.job_id.empty() ? by_class[p.class_id].front()->id : p.job_id;
}

// The job the start estimate's run starts first, now ("" = none).
std::string forecast_pick(const QueueCase& q, const Scheduler& scheduler) {
  estimate::Snapshot s;
  s.now_ms = kNow;
  s.preemption = false;
  s.scoring.locality_delay_ms = 0;
  estimate::Worker w{"w", q.worker.caps, {}, {}};
  for (const auto& r : q.worker.running) w.running.push_back({r, estimate::EndSource::unknown, false, "", std::nullopt});
  s.workers.push_back(std::move(w));
  s.limits.budget = QueueBudget(q.budget);
  s.limits.tenants = q.quotas;
  if (q.fair) {  // as the estimate service reads them (fair_shares_of)
    s.fair = fair_shares_of(PreemptionStore::FairUsageRead{*q.fair, kNow}, true);
    s.fair_layout_json = q.fair->layout_json;
  }
  for (const auto& j : q.jobs) {
    estimate::Waiting waiting;
    waiting.id = j.id;
    waiting.class_id = j.class_id;
    waiting.req = &scheduler.requirements(j.class_id, q.classes.at(j.class_id));
    waiting.score = j.score;
    waiting.tenant = j.tenant;
    waiting.enqueued_ms = kNow - 3600000;
    s.waiting.push_back(std::move(waiting));
  }
  const auto placed = estimate::forecast(s, 1);
  return !placed.empty() && placed.front().start_ms == kNow ? placed.front().job_id : "";
}

}  // namespace

namespace {

void fetch_and_forecast_agree(bool fair) {
  const auto workers = example_workers();
  SchedulerOptions options;
  options.locality_delay_ms = 0;
  options.clock = [] { return kNow; };
  const Scheduler scheduler(options);
  int started = 0, none = 0, past_first = 0, bonus_differs = 0;
  for (int n = 0; n < 1000; ++n) {
    std::mt19937 rng(static_cast<std::uint32_t>(100000 + n));
    const QueueCase q = random_queue(rng, workers, scheduler, n, fair);
    WorkerView worker;
    worker.worker_id = "w";
    worker.capabilities = q.worker.caps;
    worker.fingerprint = ml::fingerprint(q.worker.caps);
    worker.load = load_without(q.worker.running, {});
    ClassSet classes;
    classes.classes = q.classes;
    const auto verdicts = scheduler.judge(classes, worker);
    const std::string fetch = fetch_pick(q, verdicts, false);
    const std::string run = forecast_pick(q, scheduler);
    std::string queue;
    for (const auto& j : q.jobs) queue += "\n  " + j.id + " tenant '" + j.tenant + "' score " + std::to_string(j.score) + " " + q.classes.at(j.class_id);
    if (q.fair) queue += "\nfair " + q.fair->layout_json;
    ASSERT_EQ(fetch, run) << "seed " << 100000 + n << ": FETCH starts '" << fetch << "', the forecast '" << run << "'" << queue
                          << "\nbudget gpus " << q.budget.gpus_in_use << "/" << q.budget.max_gpus.value_or(-1) << ", jobs "
                          << q.budget.gpu_jobs << "/" << q.budget.max_jobs.value_or(-1) << ", tenant quotas " << q.quotas.limits.size()
                          << "\nworker " << q.worker.worker.dump();
    if (fetch.empty()) ++none;
    else ++started;
    // A pick other than the first eligible class's head: the budget or a quota chose.
    std::string first_eligible;
    for (const auto& j : q.jobs)
      if (first_eligible.empty())
        for (const auto& v : verdicts)
          if (v.class_id == j.class_id && v.judgement.eligible()) first_eligible = j.id;
    if (!fetch.empty() && fetch != first_eligible) ++past_first;
    if (fetch_pick(q, verdicts, true) != fetch) ++bonus_differs;
  }
  // Each way a decision goes is well represented, or the cases test little.
  EXPECT_GE(started, 200);
  EXPECT_GE(none, 100);
  EXPECT_GE(past_first, 30);
  std::printf("[ order ] 1000 %squeues: %d start the same job, %d start none, %d past the first eligible head; the bonus would change %d\n",
              fair ? "fair " : "", started, none, past_first, bonus_differs);
}

}  // namespace

TEST(ConsumerVerdicts, FetchAndTheForecastStartTheSameJobOnAThousandQueues) { fetch_and_forecast_agree(false); }

// Under `policy: fair` the tenants' shares and slots decide: FETCH from what it
// reads, the run from the shares it keeps (estimate::Snapshot::fair).
TEST(ConsumerVerdicts, FetchAndTheForecastStartTheSameJobOnAThousandFairQueues) { fetch_and_forecast_agree(true); }
