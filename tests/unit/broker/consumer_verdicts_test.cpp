// Issue 45: every consumer that asks "can this job start on this worker now?" gets
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
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "broker/estimate/forecast.hpp"
#include "broker/preemption/backfill.hpp"
#include "broker/preemption/capacity_plan.hpp"
#include "broker/preemption/victims.hpp"
#include "broker/scheduling/scheduler.hpp"
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
  for (const auto& r : c.running) ew.running.push_back({r, estimate::EndSource::unknown, false, ""});
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
