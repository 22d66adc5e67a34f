// Fair share over time: the `fair` policy weighs what a tenant
// has used (decayed resource-seconds) plus what it holds now, so a queue drained one
// job at a time, or one whose jobs need no GPU, is shared by weight too; and every
// resource-second is counted. Real redis-server, real broker, HTTP.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ojs/core/time.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json job(const std::string& queue, const std::string& tenant, json attrs = json::object()) {
  json j = {{"type", "ml.task"}, {"args", json::array()}, {"options", {{"queue", queue}}}, {"meta", {{"tenant_id", tenant}}}};
  for (auto it = attrs.begin(); it != attrs.end(); ++it) j[it.key()] = it.value();
  return j;
}

json gpu_worker(int gpus) {
  return {{"capabilities", {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", gpus}, {"memory_gb", 80}}}}}};
}

// Weights 1:3; the half-life is the default (an hour) unless given.
json fair_config(double half_life_seconds = -1) {
  json f = {{"weights", {{"team-a", 1}, {"team-b", 3}}}};
  if (half_life_seconds >= 0) f["half_life_seconds"] = half_life_seconds;
  return {{"policy", "fair"}, {"tenant_fairness", f}};
}

}  // namespace

class FairUsage : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  std::map<std::string, std::string> tenant_of;

  void put_config(const std::string& queue, const json& body) {
    auto r = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config", body);
    ASSERT_EQ(r.status, 200) << r.body.dump();
  }

  void push(const std::string& queue, const std::string& tenant, int n, const json& attrs = json::object()) {
    for (int i = 0; i < n; ++i) tenant_of[api.push(job(queue, tenant, attrs))] = tenant;
  }

  // One worker that fetches one job, runs it, acknowledges it, fetches again: nothing
  // is held at any FETCH. The tenants of the jobs it got, in order.
  // Each job runs kRunTime: what is shared is resource-time, so the jobs need one
  // that the loopback round trips' jitter (a scheduling stall on a loaded machine is
  // several ms, a whole empty job's worth or more) does not dominate. Nothing waits
  // for the broker here, and no wall time is asserted.
  static constexpr std::chrono::milliseconds kRunTime{3};
  std::vector<std::string> serial(const std::string& queue, int n, const json& worker = json::object(),
                                  std::vector<std::string>* ids = nullptr) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
      auto jobs = api.fetch({queue}, "serial-w", 1, worker);
      if (jobs.empty()) break;
      const std::string id = jobs[0]["id"];
      out.push_back(tenant_of.at(id));
      if (ids) ids->push_back(id);
      std::this_thread::sleep_for(kRunTime);  // the job's run
      EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "serial-w"}}).status, 200);
    }
    return out;
  }

  // Weights 1:3, team-a's 400 jobs pushed before team-b's 400, drained by `serial`:
  // team-b's share of the first 200 jobs' use is 75% +- 7.5%. The use, not the count:
  // the order equalises weighted resource-time, exactly as each job's record has it.
  // With equal jobs the two agree (team-b gets ~150 of 200); a stall while a job
  // runs (0.4-0.6 s seen on a loaded machine, ~100-150 jobs' worth) rightly costs
  // its tenant jobs, and the count drifts (126 and 188 seen under a loaded `ctest
  // -j2`) while the use stays at its weight (0.73-0.76 in the same runs).
  void expect_one_to_three(const std::string& queue, const json& attrs, const json& worker, const char* label,
                           const char* resource) {
    put_config(queue, fair_config());
    push(queue, "team-a", 400, attrs);
    push(queue, "team-b", 400, attrs);
    std::vector<std::string> ids;
    const auto got = serial(queue, 200, worker, &ids);
    ASSERT_EQ(got.size(), 200u);
    std::map<std::string, double> used;  // tenant -> resource-microseconds
    double longest = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto usage = api.get("/ojs/v1/jobs/" + ids[i]).body["job"]["usage"];
      ASSERT_TRUE(usage.contains(resource)) << usage.dump();
      used[got[i]] += usage[resource].get<double>();
      longest = std::max(longest, usage[resource].get<double>());
    }
    const double total = used["team-a"] + used["team-b"], b_share = used["team-b"] / total;
    const auto b = std::count(got.begin(), got.end(), "team-b");
    std::printf("[ usage ] %s 1:3: team-b got %ld of 200 jobs, %.3f of their %s (longest job %.3f of it)\n", label,
                static_cast<long>(b), b_share, resource, longest / total);
    // A running job is never cut short, so at the window's end the split may lag by
    // up to one job: the tolerance is the 7.5% plus the longest job's part.
    EXPECT_NEAR(b_share, 0.75, 0.075 + longest / total);
  }
};

// The measurement: one worker draining one job at a time. Held-now shares
// gave team-b 0 of the first 200 (FIFO); use over time gives it its weight's share.
TEST_F(FairUsage, SerialWorkerSharesOneToThree) {
  expect_one_to_three("fu-serial", {{"ext_ml_gpu_count", 1}}, gpu_worker(8), "serial", "gpu_us");
}

// Jobs without GPUs share too: their CPU-seconds (1 core when none is declared) are
// the dominant resource.
TEST_F(FairUsage, CpuOnlyQueueSharesOneToThree) {
  expect_one_to_three("fu-cpu", json::object(), json::object(), "cpu-only", "cpu_us");
}



// A tenant that was idle while another used the queue is served first when it
// comes back (its decayed use is low), catches up to its weight, and does not
// starve the other: once caught up the split is 1:3 again. With the default
// half-life (an hour) nothing decays noticeably during the test, so team-b's
// catch-up is what team-a used alone (x3 for its weight) and no more.
TEST_F(FairUsage, IdleThenBusyTenantCatchesUpWithoutStarvingTheOther) {
  put_config("fu-idle", fair_config());
  push("fu-idle", "team-a", 20);
  const auto alone = serial("fu-idle", 20);
  ASSERT_EQ(std::count(alone.begin(), alone.end(), "team-a"), 20);
  push("fu-idle", "team-a", 300);
  push("fu-idle", "team-b", 300);
  const auto got = serial("fu-idle", 200);  // team-b's catch-up is about 60 jobs (3 x 20)
  ASSERT_EQ(got.size(), 200u);
  EXPECT_EQ(got.front(), "team-b") << "the tenant that waited is served first";
  const auto b_first = std::count(got.begin(), got.begin() + 30, "team-b");
  const auto a_later = std::count(got.begin() + 100, got.end(), "team-a");
  std::printf("[ usage ] idle then busy: team-b %ld of the first 30, team-a %ld of the last 100\n", static_cast<long>(b_first),
              static_cast<long>(a_later));
  EXPECT_GE(b_first, 28) << "team-b catches up";
  EXPECT_GE(a_later, 10) << "team-a is not starved once team-b caught up";
  // Over both phases (220 jobs) the split is the weights'.
  const auto b_all = std::count(got.begin(), got.end(), "team-b");
  EXPECT_NEAR(static_cast<double>(b_all) / 220, 0.75, 0.075);
}

// Weight changes nothing without use: `half_life_seconds: 0` keeps no history, the
// order is by what is held now (the policy before decayed use counted): a serial worker is FIFO.
TEST_F(FairUsage, ZeroHalfLifeWeighsOnlyWhatIsHeldNow) {
  put_config("fu-zero", fair_config(0));
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/fu-zero/config").body["config"]["tenant_fairness"]["half_life_seconds"], 0);
  push("fu-zero", "team-a", 20);
  push("fu-zero", "team-b", 20);
  const auto got = serial("fu-zero", 20);
  EXPECT_EQ(std::count(got.begin(), got.end(), "team-a"), 20);
  // Held now still shares a batch: 8 one-GPU jobs fetched at once split 2:6.
  push("fu-zero", "team-a", 20, {{"ext_ml_gpu_count", 1}});
  push("fu-zero", "team-b", 20, {{"ext_ml_gpu_count", 1}});
  auto jobs = api.fetch({"fu-zero"}, "batch-w", 8, gpu_worker(8));
  std::map<std::string, int> n;
  for (const auto& j : jobs) n[tenant_of.at(j["id"])]++;
  EXPECT_EQ(n["team-b"], 6);
}

// A gang's attempt is held use like any claim's: while team-a's 2 x 4-GPU gang runs,
// a FETCH of one job serves team-b first (team-a holds 8 GPUs, team-b none; neither
// has used anything yet, so without the gang counted the tie goes to team-a's older
// job), and the gang's GPUs leave team-a's held use when it ends.
TEST_F(FairUsage, GangAttemptCountsInItsTenantsHeldUse) {
  const std::string q = "fu-gang";
  put_config(q, fair_config());
  const auto held_gpus = [&](const std::string& tenant) {
    const auto v = redis_lines(redis, {"HGET", "ojs:{" + q + "}:usage", tenant + "|run"});
    return v.empty() || v[0].empty() ? 0.0 : std::stod(v[0]);  // 'gpus cpus memory_mb gpu_memory_mb'
  };
  json gang = job(q, "team-a", {{"ext_ml_gpu_count", 4}, {"ext_ml_gang", {{"size", 2}}}});
  const std::string gang_id = api.push(gang);
  const auto host = [](const std::string& address) {
    json caps = example_worker("4xa100-pcie");
    caps["labels"]["rendezvous.ojs.io/address"] = address;
    caps["labels"]["rendezvous.ojs.io/port"] = "29500";
    return json{{"capabilities", caps}};
  };
  const json w1 = host("10.0.0.1"), w2 = host("10.0.0.2");
  EXPECT_EQ(api.fetch({q}, "gw1", 1, w1).size(), 0u);  // held: the gang forms
  auto started = api.fetch({q}, "gw2", 1, w2);
  ASSERT_EQ(started.size(), 1u);
  ASSERT_EQ(started[0]["id"], gang_id);
  EXPECT_EQ(held_gpus("team-a"), 8);

  push(q, "team-a", 1, {{"ext_ml_gpu_count", 1}});
  push(q, "team-b", 1, {{"ext_ml_gpu_count", 1}});
  auto next = api.fetch({q}, "plain-w", 1, gpu_worker(8));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(tenant_of.at(next[0]["id"]), "team-b") << "team-a holds the gang's 8 GPUs";

  ASSERT_EQ(api.fetch({q}, "gw1", 1, w1).size(), 1u);  // rank 0's delivery
  for (const char* w : {"gw1", "gw2"})
    ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", gang_id}, {"worker_id", w}}).status, 200);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + gang_id).body["job"]["state"], "completed");
  ASSERT_EQ(api.get("/ojs/v1/admin/usage?queue=" + q).status, 200);  // the report folds the journal of ends
  EXPECT_EQ(held_gpus("team-a"), 0) << "the gang's GPUs leave the held use at its end";
}

// A running job's use counts as it accrues, not only once it ends: team-a's job and
// team-b's hold one GPU each and neither tenant has used anything yet, but team-a's
// has run longer (it started first, and ran alone for a few ms: the scenario, not a
// wait for the broker), so the next claim serves team-b. Held now alone ties them,
// and the tie goes to team-a's older waiting job.
TEST_F(FairUsage, RunningJobsUseCountsAsItRuns) {
  const std::string q = "fu-running";
  put_config(q, {{"policy", "fair"}, {"tenant_fairness", {{"weights", {{"team-a", 1}, {"team-b", 1}}}}}});
  const json one_gpu = {{"ext_ml_gpu_count", 1}};
  push(q, "team-a", 1, one_gpu);
  push(q, "team-b", 1, one_gpu);
  push(q, "team-a", 1, one_gpu);
  push(q, "team-b", 1, one_gpu);
  auto first = api.fetch({q}, "run-w1", 1, gpu_worker(1));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(tenant_of.at(first[0]["id"]), "team-a") << "no use, nothing held: the oldest job";
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // team-a's job runs alone
  auto second = api.fetch({q}, "run-w2", 1, gpu_worker(1));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(tenant_of.at(second[0]["id"]), "team-b") << "team-a holds a GPU";
  auto third = api.fetch({q}, "run-w3", 1, gpu_worker(1));
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(tenant_of.at(third[0]["id"]), "team-b") << "team-a's running job has used more GPU-time";
}

TEST_F(FairUsage, BadHalfLifeIs400NamingTheField) {
  for (const json& bad : {json(-1), json("1h"), json(40000000)}) {
    auto r = api.call("PUT", "/ojs/v1/admin/queues/fu-bad/config",
                      {{"policy", "fair"}, {"tenant_fairness", {{"half_life_seconds", bad}}}});
    EXPECT_EQ(r.status, 400) << bad.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], "tenant_fairness.half_life_seconds") << r.body.dump();
  }
}

// Every running attempt's use is counted once: each job's record (usage, summed over
// its attempts) adds up exactly to the queue's totals per tenant and resource, over
// acks, a retry (NACK), a requeue, a cancel of a running job and jobs that never ran.
TEST_F(FairUsage, UsageTotalsEqualTheSumOfTheJobsRecords) {
  const std::string q = "fu-totals";
  put_config(q, fair_config());
  push(q, "team-a", 6, {{"ext_ml_gpu_count", 2}, {"ext_ml_cpu_cores", 4}, {"ext_ml_memory_gb", 16}});
  push(q, "team-b", 6, {{"ext_ml_cpu_cores", 2}});
  push(q, "team-b", 2);  // never fetched
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) {
    json worker = gpu_worker(8);
    worker["capabilities"]["cpu_cores"] = 64;
    worker["capabilities"]["memory_gb"] = 512;
    auto jobs = api.fetch({q}, "tot-w", 1, worker);
    ASSERT_EQ(jobs.size(), 1u);
    const std::string id = jobs[0]["id"];
    ids.push_back(id);
    if (i % 4 == 1) {  // a failed attempt, retried later (its use is counted too)
      ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "tot-w"}, {"error", {{"message", "x"}}}}).status, 200);
    } else if (i % 4 == 2) {
      ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + id).status, 200);  // cancelled while running
    } else {
      ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "tot-w"}}).status, 200);
    }
  }
  std::map<std::string, long long> from_jobs;  // tenant TAB resource -> us
  long long jobs_with_usage = 0;
  for (const auto& [id, tenant] : tenant_of) {
    const auto j = api.get("/ojs/v1/jobs/" + id).body["job"];
    if (!j.contains("usage")) continue;
    ++jobs_with_usage;
    for (auto it = j["usage"].begin(); it != j["usage"].end(); ++it) {
      const std::string key = it.key();
      from_jobs[tenant + "\t" + key.substr(0, key.size() - 3)] += it.value().get<long long>();
    }
  }
  EXPECT_EQ(jobs_with_usage, 12);

  // The accounting views read the same integers: the hourly rollup by tenant (the
  // last 24 hours cover the test), by worker, and the Prometheus counters. The ends
  // are journaled; a report folds what its queues' journals hold before it reads.
  const auto report = api.get("/ojs/v1/admin/usage?by=tenant&queue=" + q);
  ASSERT_EQ(report.status, 200) << report.body.dump();
  std::map<std::string, long long> totals;
  const auto flat = redis_lines(redis, {"HGETALL", "ojs:{" + q + "}:usage-totals"});
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) totals[flat[i]] = std::stoll(flat[i + 1]);
  EXPECT_EQ(totals, from_jobs);
  EXPECT_TRUE(totals.count("team-a\tgpu") && totals.count("team-a\tmemory_mb") && totals.count("team-b\tcpu"));
  EXPECT_FALSE(totals.count("team-b\tgpu"));
  std::map<std::string, long long> from_report;
  for (const auto& row : report.body["rows"])
    for (auto it = row["microseconds"].begin(); it != row["microseconds"].end(); ++it)
      if (it.value().get<long long>() > 0) from_report[row["tenant"].get<std::string>() + "\t" + it.key()] = it.value();
  EXPECT_EQ(from_report, totals);
  const auto by_worker = api.get("/ojs/v1/admin/usage?by=worker").body["rows"];
  ASSERT_EQ(by_worker.size(), 1u) << by_worker.dump();
  EXPECT_EQ(by_worker[0]["worker"], "tot-w");
  EXPECT_DOUBLE_EQ(by_worker[0]["cpu_seconds"].get<double>(), static_cast<double>(totals["team-a\tcpu"] + totals["team-b\tcpu"]) / 1e6);
  ojs::HttpClientOptions options;
  options.base_url = broker.url();
  const auto metrics = ojs::HttpClient(options).get("/metrics").body;
  EXPECT_NE(metrics.find("ojs_resource_seconds_total{queue=\"fu-totals\",tenant=\"team-a\",resource=\"gpu\"} "), std::string::npos);
  EXPECT_NE(metrics.find("ojs_resource_seconds_total{queue=\"fu-totals\",tenant=\"team-b\",resource=\"cpu\"} "), std::string::npos);
  // ojsctl usage: the same report, as a table of resource-hours or as JSON.
  const auto ctl = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), "usage", "--by", "tenant", "--queue", q}, 60);
  EXPECT_EQ(ctl.exit_code, 0) << ctl.output;
  EXPECT_NE(ctl.output.find("GPU-HOURS"), std::string::npos) << ctl.output;
  EXPECT_NE(ctl.output.find("team-a"), std::string::npos) << ctl.output;
  const auto ctl_json = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), "-o", "json", "usage", "--by", "queue"}, 60);
  EXPECT_EQ(json::parse(ctl_json.output)["rows"][0]["queue"], q) << ctl_json.output;
}

// The report reads the hours it is asked for, not the whole rollup: rows of the
// window's hours [h+9, h+10] (from/to rounded to whole hours) are summed, the hours
// beside them are not, and 20000 rows of another hour kept by the retention never
// cross the network (Redis's output bytes for the request stay far below them).
TEST_F(FairUsage, UsageReportReadsOnlyTheWindowsHours) {
  const std::string q = "fu-window", key = "ojs:{fu-window}:usage-hours";
  constexpr std::int64_t kHourMs = 3600000;
  const auto now_hour = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count() / kHourMs;
  const std::int64_t h = (now_hour / 100 - 2) * 100;  // within the retention (90 days)
  const auto row = [](std::int64_t hour, const std::string& tenant, const std::string& resource) {
    return std::to_string(hour) + "\t" + tenant + "\tml.task\tw1\t" + resource;
  };
  redis_lines(redis, {"HSET", key, row(h + 8, "team-a", "gpu"), "7", row(h + 9, "team-a", "gpu"), "1000",
                      row(h + 10, "team-a", "gpu"), "2000", row(h + 10, "team-b", "cpu"), "500",
                      row(h + 11, "team-a", "gpu"), "9"});
  redis_lines(redis, {"EVAL", "for i = 1, 20000 do redis.call('HSET', KEYS[1], ARGV[1] .. i .. ARGV[2], 1) end", "1", key,
                      std::to_string(h + 50) + "\tbulk-", "\tml.task\tw1\tgpu"});
  const auto output_bytes = [&] {
    for (const auto& line : redis_lines(redis, {"INFO", "stats"}))
      if (line.rfind("total_net_output_bytes:", 0) == 0) return std::stoll(line.substr(23));
    return -1LL;
  };
  const auto before = output_bytes();
  const auto r = api.get("/ojs/v1/admin/usage?by=tenant&queue=" + q + "&from=" + ojs::format_rfc3339((h + 9) * kHourMs + 1800000) +
                         "&to=" + ojs::format_rfc3339((h + 10) * kHourMs + 600000));
  const auto sent = output_bytes() - before;
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["from"], ojs::format_rfc3339((h + 9) * kHourMs));
  EXPECT_EQ(r.body["to"], ojs::format_rfc3339((h + 11) * kHourMs));
  std::map<std::string, long long> got;
  for (const auto& x : r.body["rows"])
    for (auto it = x["microseconds"].begin(); it != x["microseconds"].end(); ++it)
      if (it.value().get<long long>() > 0) got[x["tenant"].get<std::string>() + " " + it.key()] = it.value();
  EXPECT_EQ(got, (std::map<std::string, long long>{{"team-a gpu", 3000}, {"team-b cpu", 500}})) << r.body.dump();
  std::printf("[ usage ] report of 2 hours beside 20000 rows of another: Redis sent %lld bytes\n", sent);
  EXPECT_LT(sent, 100000) << "the 20000 rows outside the window were read";
}

// The report's parameters are checked, each 400 naming the parameter; an admin role
// is required (as every /ojs/v1/admin endpoint: tests/integration/auth_test.cpp).
TEST_F(FairUsage, UsageReportRejectsBadParametersNamingThem) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"by=team", "by"},
      {"from=yesterday", "from"},
      {"to=2026-13-01T00:00:00Z", "to"},
      {"from=2026-02-02T00:00:00Z&to=2026-02-01T00:00:00Z", "from"},
      {"queue=Bad_Queue", "queue"},
  };
  for (const auto& [query, field] : bad) {
    const auto r = api.get("/ojs/v1/admin/usage?" + query);
    EXPECT_EQ(r.status, 400) << query;
    EXPECT_EQ(r.body["error"]["details"]["field"], field) << query << " -> " << r.body.dump();
  }
  const auto ok = api.get("/ojs/v1/admin/usage?from=2026-02-01T00:30:00Z&to=2026-02-01T01:10:00Z&by=type");
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  EXPECT_EQ(ok.body["from"], "2026-02-01T00:00:00.000Z");  // whole hours: the rollup's grain
  EXPECT_EQ(ok.body["to"], "2026-02-01T02:00:00.000Z");
  EXPECT_EQ(ok.body["rows"], json::array());
}

// The end of an attempt is journaled in the step that ends it (an ACK's with its
// completion line), and settled (settle.lua: folded into the totals, the hourly
// rollup and the decayed use) before the usage report reads them.
// A `fair` claim folds nothing: the end took what the job held out of its tenant's
// held use at once, and its use stays counted in the held value until a fold (the
// maintenance pass's, about once a second) moves it. The maintenance pass is off here
// (an hourly one still ran its first pass at start, which could fold on a loaded
// machine), so only the report folds.
TEST(UsageJournal, EndsAreJournaledAndFoldedBeforeEachRead) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  const std::string q = "uj", journal = "ojs:{uj}:usage-journal";
  auto llen = [&] { return std::stoll(redis_lines(redis, {"LLEN", journal}).at(0)); };
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config", fair_config()).status, 200);
  for (int i = 0; i < 3; ++i) api.push(job(q, "team-a"));  // 1 CPU each (the default)

  auto first = api.fetch({q}, "uj-w", 1);
  ASSERT_EQ(first.size(), 1u);
  const std::string id = first[0]["id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the job's run: some microseconds to count
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "uj-w"}}).status, 200);
  EXPECT_EQ(llen(), 2);  // journaled (its usage and its completion), not settled yet
  EXPECT_TRUE(redis_lines(redis, {"HGETALL", "ojs:{uj}:usage-totals"}).empty());
  // Its CPU left team-a's held use at its end ('n1 n2 n3 n4 at r1 r2': n2 the CPU cores).
  const auto held = redis_lines(redis, {"HGET", "ojs:{uj}:usage", "team-a|run"});
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].rfind("0 0 0 0 ", 0), 0u) << held[0];

  // A fair claim reads the use as stored: nothing folded.
  ASSERT_EQ(api.fetch({q}, "uj-w", 1).size(), 1u);
  EXPECT_EQ(llen(), 2);

  // The report folds, and reads the same integers as the job's own record.
  const auto record = api.get("/ojs/v1/jobs/" + id).body["job"]["usage"];
  ASSERT_TRUE(record.contains("cpu_us")) << record.dump();
  auto second = api.fetch({q}, "uj-w2", 1);  // (the claim above took the second job; this the third)
  ASSERT_EQ(second.size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", second[0]["id"]}, {"worker_id", "uj-w2"},
                                               {"error", {{"message", "x"}, {"retryable", false}}}}).status, 200);
  EXPECT_EQ(llen(), 4);  // its usage and its discard (settle.lua counts it)
  const auto report = api.get("/ojs/v1/admin/usage?by=worker&queue=" + q);
  ASSERT_EQ(report.status, 200) << report.body.dump();
  EXPECT_EQ(llen(), 0);
  const auto used = redis_lines(redis, {"HGET", "ojs:{uj}:usage", "team-a"});  // folded: team-a's decayed use
  ASSERT_EQ(used.size(), 1u);
  EXPECT_NE(used[0].find(' '), std::string::npos) << used[0];  // 'at u1 u2 u3 u4'
  const auto second_record = api.get("/ojs/v1/jobs/" + second[0]["id"].get<std::string>()).body["job"]["usage"];
  std::map<std::string, long long> cpu_by_worker;
  for (const auto& row : report.body["rows"]) cpu_by_worker[row["worker"]] = row["microseconds"]["cpu"];
  EXPECT_EQ(cpu_by_worker["uj-w"], record["cpu_us"].get<long long>());
  EXPECT_EQ(cpu_by_worker["uj-w2"], second_record.value("cpu_us", 0LL));
}

// The hourly rollup keeps --usage-retention-hours: the maintenance pass (at start,
// then about once a minute) drops the older hours a page at a time (more rows here
// than one HSCAN page) and keeps the rest.
TEST(UsageRetention, OlderHoursAreTrimmedAndNewerKept) {
  RedisServer redis;
  {
    BrokerProcess first{redis.url()};
    Api api{first.url()};
    api.push(job("ur", "team-a"));  // the queue is in the directory the pass walks
  }
  const std::string key = "ojs:{ur}:usage-hours";
  const long long now_hour =
      std::chrono::duration_cast<std::chrono::hours>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<std::string> hset{"HSET", key};
  for (int i = 0; i < 2500; ++i)  // 2,500 rows of hours long past
    for (const auto& part : {std::to_string(now_hour - 100 - i % 50) + "\tteam-a\tml.task\tw" + std::to_string(i) + "\tcpu",
                             std::string("1000")})
      hset.push_back(part);
  for (long long h : {now_hour - 2, now_hour - 1, now_hour}) hset.insert(hset.end(), {std::to_string(h) + "\tteam-a\tml.task\tw\tcpu", "7"});
  redis_lines(redis, hset);
  ASSERT_EQ(redis_lines(redis, {"HLEN", key}).at(0), "2503");

  BrokerProcess broker{redis.url(), {"--usage-retention-hours", "2"}};
  std::string left;
  for (int waited = 0; waited < 20000; waited += 50) {
    left = redis_lines(redis, {"HLEN", key}).at(0);
    if (left == "3") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(left, "3");
  for (long long h : {now_hour - 2, now_hour - 1, now_hour})
    EXPECT_EQ(redis_lines(redis, {"HGET", key, std::to_string(h) + "\tteam-a\tml.task\tw\tcpu"}).at(0), "7") << h;
}
