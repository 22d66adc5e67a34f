// Hostile use of cron, batch, unique PUSH, queue config and the embedded Redis:
// each test reproduces a defect once found there. Real redis-server, real broker, HTTP over loopback.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// Two tenant-pinned producers, a worker and an admin; returns the file's path.
std::string write_tenant_tokens(const std::string& dir) {
  const json entries = json::array({
      {{"name", "team-a"}, {"roles", {"producer"}}, {"sha256", token_sha256("a-token")}, {"tenant", "team-a"}},
      {{"name", "team-b"}, {"roles", {"producer"}}, {"sha256", token_sha256("b-token")}, {"tenant", "team-b"}},
      {{"name", "gpu-node"}, {"roles", {"worker"}}, {"sha256", token_sha256("worker-token")}},
      {{"name", "ops"}, {"role", "admin"}, {"sha256", token_sha256("admin-token")}},
  });
  const std::string path = dir + "/tokens.json";
  std::ofstream(path) << entries.dump(2);
  return path;
}

json cron(const std::string& name, const std::string& expr, const std::string& queue, json extra = json::object()) {
  json body = {{"name", name}, {"cron", expr}, {"type", "cron.tick"}, {"args", json::array({"secret-arg"})},
               {"options", {{"queue", queue}}}};
  body.update(extra);
  return body;
}

json job(const std::string& queue, json extra = json::object()) {
  json j = {{"type", "h3.task"}, {"args", json::array()}, {"options", {{"queue", queue}}}};
  j.update(extra);
  return j;
}

long long hlen(const RedisServer& redis, const std::string& key) {
  const auto lines = redis_lines(redis, {"HLEN", key});
  return lines.empty() ? -1 : std::stoll(lines[0]);
}

const std::string kJobDirectory = "ojs:{_global}:job-queue";
const std::string kQueueDirectory = "ojs:{_global}:queues";

}  // namespace

class HostileProducers : public ::testing::Test {
 protected:
  RedisServer redis;
};

// #2: a team-b token listed team-a's crons with their args, overwrote one and deleted it.
TEST_F(HostileProducers, CronIsScopedToTheCallersTenant) {
  const auto dir = make_temp_dir("h3-cron-scope");
  BrokerProcess broker{redis.url(), {"--auth-file", write_tenant_tokens(dir)}};
  Api a{broker.url(), "a-token"}, b{broker.url(), "b-token"}, ops{broker.url(), "admin-token"};
  ASSERT_EQ(a.post("/ojs/v1/cron", cron("a-nightly", "0 3 * * *", "h3-cron-a")).status, 201);
  ASSERT_EQ(b.post("/ojs/v1/cron", cron("b-nightly", "0 4 * * *", "h3-cron-b")).status, 201);

  const auto listed = b.get("/ojs/v1/cron");
  ASSERT_EQ(listed.status, 200);
  ASSERT_EQ(listed.body["crons"].size(), 1u) << listed.body.dump();
  EXPECT_EQ(listed.body["crons"][0]["name"], "b-nightly");
  EXPECT_EQ(b.get("/ojs/v1/cron/a-nightly").status, 404);
  const auto overwrite = b.post("/ojs/v1/cron", cron("a-nightly", "* * * * * *", "h3-cron-b"));
  EXPECT_EQ(overwrite.status, 409) << overwrite.body.dump();
  EXPECT_EQ(overwrite.body["error"]["details"]["field"], "name");
  EXPECT_EQ(b.call("DELETE", "/ojs/v1/cron/a-nightly").status, 404);

  // The owner still has it as registered; an admin sees every tenant's.
  const auto mine = a.get("/ojs/v1/cron/a-nightly");
  ASSERT_EQ(mine.status, 200);
  EXPECT_EQ(mine.body["cron"]["cron"], "0 3 * * *");
  EXPECT_EQ(mine.body["cron"]["tenant"], "team-a");
  EXPECT_EQ(a.get("/ojs/v1/cron").body["crons"].size(), 1u);
  EXPECT_EQ(ops.get("/ojs/v1/cron").body["crons"].size(), 2u);
  EXPECT_EQ(ops.get("/ojs/v1/cron/a-nightly").status, 200);
  EXPECT_EQ(a.call("DELETE", "/ojs/v1/cron/a-nightly").status, 200);
  std::filesystem::remove_all(dir);
}

// #4: tick jobs carried no tenant (the owner got 404 on them, quotas and fair share
// missed them) and were not charged to --push-rate.
TEST_F(HostileProducers, CronTicksCarryTheTenantAndAreChargedToThePushRate) {
  const auto dir = make_temp_dir("h3-cron-tenant");
  BrokerProcess broker{redis.url(), {"--auth-file", write_tenant_tokens(dir), "--push-rate", "0.001", "--push-burst", "3"}};
  Api a{broker.url(), "a-token"}, worker{broker.url(), "worker-token"};
  ASSERT_EQ(a.post("/ojs/v1/cron", cron("a-every-second", "* * * * * *", "h3-cron-rate", {{"overlap_policy", "allow"}})).status, 201);
  ASSERT_TRUE(wait_until([&] { return a.get("/ojs/v1/cron/a-every-second").body["cron"]["run_count"].get<long long>() >= 3; }))
      << a.get("/ojs/v1/cron/a-every-second").body.dump();

  const auto jobs = worker.fetch({"h3-cron-rate"}, "w1", 1);
  ASSERT_EQ(jobs.size(), 1u);
  const auto id = jobs[0]["id"].get<std::string>();
  const auto info = a.get("/ojs/v1/jobs/" + id);
  ASSERT_EQ(info.status, 200) << "the cron's owner cannot see its tick job: " << info.body.dump();
  EXPECT_EQ(info.body["job"]["meta"]["tenant_id"], "team-a");

  // Three ticks took the burst of 3: team-a's own PUSH is over its rate now.
  const auto push = a.post("/ojs/v1/jobs", job("h3-cron-rate"));
  EXPECT_EQ(push.status, 429) << push.body.dump();
  std::filesystem::remove_all(dir);
}

// #15: "@every" with a huge duration overflowed (next_run_at in year -292275027).
TEST_F(HostileProducers, EveryDurationsAreBounded) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  for (const std::string expr : {"@every 999999999h", "@every 999999999h999999999h999999999h999999999h999999999h",
                                 "@every 876001h"}) {
    const auto r = api.post("/ojs/v1/cron", cron("huge", expr, "h3-every"));
    EXPECT_EQ(r.status, 400) << expr << ": " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], "cron") << expr;
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find("100 years"), std::string::npos) << r.body.dump();
  }
  const auto ok = api.post("/ojs/v1/cron", cron("long", "@every 876000h", "h3-every"));
  ASSERT_EQ(ok.status, 201) << ok.body.dump();
  EXPECT_EQ(ok.body["cron"]["next_run_at"].get<std::string>().substr(0, 2), "21") << ok.body.dump();
  EXPECT_TRUE(api.get("/ojs/v1/cron/huge").status == 404);
}

// #16: no bound on the number of crons or the expression's size.
TEST_F(HostileProducers, CronCountAndExpressionSizeAreBounded) {
  const auto dir = make_temp_dir("h3-cron-caps");
  BrokerProcess broker{redis.url(), {"--auth-file", write_tenant_tokens(dir), "--max-crons", "3", "--max-crons-per-tenant", "2"}};
  Api a{broker.url(), "a-token"}, b{broker.url(), "b-token"};
  ASSERT_EQ(a.post("/ojs/v1/cron", cron("a-1", "0 3 * * *", "h3-caps")).status, 201);
  ASSERT_EQ(a.post("/ojs/v1/cron", cron("a-2", "0 3 * * *", "h3-caps")).status, 201);
  const auto third = a.post("/ojs/v1/cron", cron("a-3", "0 3 * * *", "h3-caps"));
  EXPECT_EQ(third.status, 422) << third.body.dump();
  EXPECT_EQ(third.body["error"]["details"]["limit"], "max_crons_per_tenant");
  EXPECT_EQ(third.body["error"]["details"]["max"], 2);
  EXPECT_EQ(a.post("/ojs/v1/cron", cron("a-2", "0 4 * * *", "h3-caps")).status, 201) << "replacing one is not a new one";
  ASSERT_EQ(b.post("/ojs/v1/cron", cron("b-1", "0 3 * * *", "h3-caps")).status, 201);
  const auto fourth = b.post("/ojs/v1/cron", cron("b-2", "0 3 * * *", "h3-caps"));
  EXPECT_EQ(fourth.status, 422) << fourth.body.dump();
  EXPECT_EQ(fourth.body["error"]["details"]["limit"], "max_crons");
  EXPECT_EQ(fourth.body["error"]["details"]["max"], 3);
  EXPECT_EQ(b.get("/ojs/v1/cron/b-2").status, 404);

  ASSERT_EQ(a.call("DELETE", "/ojs/v1/cron/a-1").status, 200);
  std::string long_expr = "0 3 * * " + std::string(300, '1');
  const auto big = a.post("/ojs/v1/cron", cron("a-big", long_expr, "h3-caps"));
  EXPECT_EQ(big.status, 400) << big.body.dump();
  EXPECT_EQ(big.body["error"]["details"]["field"], "cron");
  EXPECT_NE(big.body["error"]["message"].get<std::string>().find("256"), std::string::npos) << big.body.dump();
  std::filesystem::remove_all(dir);
}

// #16: every maintenance pass read every cron (20k idle crons: ~28% broker and 27%
// Redis CPU). Now a pass reads the due ones only: over the passes that fire one
// every-second cron, the Redis calls do not grow with 300 idle crons.
TEST_F(HostileProducers, IdleCronsCostNothingPerMaintenancePass) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  for (int i = 0; i < 300; ++i)
    ASSERT_EQ(api.post("/ojs/v1/cron", cron("idle-" + std::to_string(i), "0 3 1 1 *", "h3-idle")).status, 201);
  ASSERT_EQ(api.post("/ojs/v1/cron", cron("busy", "* * * * * *", "h3-busy", {{"overlap_policy", "allow"}})).status, 201);
  auto run_count = [&] { return api.get("/ojs/v1/cron/busy").body["cron"]["run_count"].get<long long>(); };
  auto cron_state_reads = [&] {
    long long calls = 0;
    for (const auto& line : redis_lines(redis, {"INFO", "commandstats"}))
      if (line.rfind("cmdstat_hgetall:", 0) == 0) calls += std::stoll(line.substr(line.find("calls=") + 6));
    return calls;
  };
  ASSERT_TRUE(wait_until([&] { return run_count() >= 1; }));
  const auto first = run_count();
  const auto before = cron_state_reads();
  ASSERT_TRUE(wait_until([&] { return run_count() >= first + 2; }));
  const auto reads = cron_state_reads() - before;
  // About 20 passes of 50 ms in two seconds: 300 idle crons read on each would be 6,000+.
  EXPECT_LT(reads, 600) << "HGETALL calls over two ticks with 300 idle crons";
}

// #11: one batch could create more queues than --max-queues, and a refused batch
// registered its queues anyway.
TEST_F(HostileProducers, BatchChecksTheQueueCapAsAWholeAndRegistersNothingWhenRefused) {
  BrokerProcess broker{redis.url(), {"--max-queues", "3"}};
  Api api{broker.url()};
  api.push(job("h3-q0"));
  ASSERT_EQ(hlen(redis, kQueueDirectory), 1);
  const json batch = {{"jobs", {job("h3-q1"), job("h3-q2"), job("h3-q3"), job("h3-q0")}}};
  const auto r = api.post("/ojs/v1/jobs/batch", batch);
  EXPECT_EQ(r.status, 422) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["limit"], "max_queues");
  EXPECT_EQ(hlen(redis, kQueueDirectory), 1) << "a refused batch registered queues";

  // Refused for a duplicate id: its new queues are not registered either.
  const auto taken = api.push(job("h3-q0"));
  const json dup = {{"jobs", {job("h3-q1"), job("h3-q0", {{"id", taken}})}}};
  EXPECT_EQ(api.post("/ojs/v1/jobs/batch", dup).status, 409);
  EXPECT_EQ(hlen(redis, kQueueDirectory), 1);

  const json fits = {{"jobs", {job("h3-q1"), job("h3-q2"), job("h3-q0")}}};
  EXPECT_EQ(api.post("/ojs/v1/jobs/batch", fits).status, 201);
  EXPECT_EQ(hlen(redis, kQueueDirectory), 3);
}

// #12: refused batches and workflows and rejected or ignored unique PUSHes left
// their reserved ids in the job directory (5 refused batches: +4,995 entries).
TEST_F(HostileProducers, RefusedRequestsReleaseTheIdsTheyReserved) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto taken = api.push(job("h3-ids"));
  const auto entries = hlen(redis, kJobDirectory);

  json batch = {{"jobs", json::array()}};
  for (int i = 0; i < 200; ++i) batch["jobs"].push_back(job("h3-ids"));
  batch["jobs"].push_back(job("h3-ids", {{"id", taken}}));
  for (int round = 0; round < 3; ++round) EXPECT_EQ(api.post("/ojs/v1/jobs/batch", batch).status, 409);
  EXPECT_EQ(hlen(redis, kJobDirectory), entries) << "refused batches";

  const json workflow = {{"type", "group"}, {"jobs", {job("h3-ids"), job("h3-ids"), job("h3-ids", {{"id", taken}})}}};
  EXPECT_EQ(api.post("/ojs/v1/workflows", workflow).status, 409);
  EXPECT_EQ(hlen(redis, kJobDirectory), entries) << "a refused workflow";
  EXPECT_EQ(hlen(redis, "ojs:{_global}:workflow-queue"), 0) << "a refused workflow";

  auto unique = [](const std::string& on_conflict) {
    return job("h3-ids", {{"args", {"same"}}, {"unique", {{"keys", {"type", "args"}}, {"on_conflict", on_conflict}}}});
  };
  ASSERT_EQ(api.post("/ojs/v1/jobs", unique("reject")).status, 201);
  const auto with_holder = hlen(redis, kJobDirectory);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(api.post("/ojs/v1/jobs", unique("reject")).status, 409);
    EXPECT_EQ(api.post("/ojs/v1/jobs", unique("ignore")).status, 200);
  }
  EXPECT_EQ(hlen(redis, kJobDirectory), with_holder) << "rejected and ignored unique PUSHes";
}

// #14: 50 concurrent unique PUSHes with on_conflict replace got 500s ("uniqueness
// key kept changing") and left a cancelled holder whose replaced_by was never stored.
TEST_F(HostileProducers, ConcurrentUniqueReplaceNeverFailsAndReplacedByIsAlwaysStored) {
  BrokerProcess broker{redis.url(), {"--handler-threads", "16"}};
  const json body = job("h3-unique", {{"args", {"k"}}, {"unique", {{"keys", {"type", "args"}}, {"on_conflict", "replace"}}}});
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> threads;
    std::mutex mutex;
    std::vector<std::string> created;
    std::vector<std::string> failures;
    for (int t = 0; t < 50; ++t)
      threads.emplace_back([&] {
        Api api{broker.url()};
        const auto r = api.post("/ojs/v1/jobs", body);
        std::lock_guard lock(mutex);
        if (r.status == 201) created.push_back(r.body["job"]["id"].get<std::string>());
        else if (r.status != 409) failures.push_back(std::to_string(r.status) + " " + r.body.dump());
      });
    for (auto& t : threads) t.join();
    EXPECT_TRUE(failures.empty()) << failures.size() << " failed, e.g. " << failures[0];
    ASSERT_FALSE(created.empty());
    Api api{broker.url()};
    int alive = 0;
    for (const auto& id : created) {
      const auto info = api.get("/ojs/v1/jobs/" + id);
      ASSERT_EQ(info.status, 200);
      const auto& j = info.body["job"];
      if (j["state"] != "cancelled") {
        ++alive;
        continue;
      }
      ASSERT_TRUE(j.contains("replaced_by")) << j.dump();
      const auto by = api.get("/ojs/v1/jobs/" + j["replaced_by"].get<std::string>());
      EXPECT_EQ(by.status, 200) << id << " names a replacement never stored: " << j["replaced_by"];
    }
    EXPECT_GE(alive, 1) << "the job holding the uniqueness key";
  }
}

// #18: a queue config with 4,000 tenant quotas answered 500 (Lua unpack limit).
TEST_F(HostileProducers, TenantQuotaListsAreBoundedAndWrittenInSlices) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  auto config_with = [](int tenants) {
    json list = json::object();
    for (int i = 0; i < tenants; ++i) list["t" + std::to_string(i)] = {{"max_gpus", 1}};
    return json{{"tenant_quotas", {{"tenants", list}}}};
  };
  const auto too_many = api.call("PUT", "/ojs/v1/admin/queues/h3-quotas/config", config_with(4000));
  EXPECT_EQ(too_many.status, 400) << too_many.body.dump().substr(0, 300);
  EXPECT_EQ(too_many.body["error"]["details"]["field"], "tenant_quotas.tenants");
  EXPECT_NE(too_many.body["error"]["message"].get<std::string>().find("3999"), std::string::npos) << too_many.body.dump();
  const auto most = api.call("PUT", "/ojs/v1/admin/queues/h3-quotas/config", config_with(3999));
  ASSERT_EQ(most.status, 200) << most.body.dump().substr(0, 300);
  EXPECT_EQ(hlen(redis, "ojs:{h3-quotas}:tenant-quotas"), 3999);
}

// #10: kill -9 of the embedded redis-server left the broker answering 503 forever
// with a zombie child. The broker restarts it from its AOF.
TEST(HostileProducersEmbeddedRedis, ABrokerRestartsItsKilledRedisFromTheAof) {
  const std::string dir = make_temp_dir("h3-embedded") + "/data";
  BrokerProcess broker("", {"--data-dir", dir});
  Api api{broker.url()};
  const auto id = api.push(job("h3-embedded"));
  // The AOF is fsynced every second: wait until the job is on disk (what a
  // SIGKILL cannot take back).
  ASSERT_TRUE(wait_until([&] {
    std::string all;
    for (const auto& f : std::filesystem::directory_iterator(dir + "/appendonlydir")) {
      std::ifstream in(f.path());
      all.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return all.find(id) != std::string::npos;
  }));

  for (int round = 0; round < 2; ++round) {
    // The embedded redis-server: the broker's child process.
    pid_t redis_pid = -1;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      std::ifstream stat(entry.path() / "stat");
      std::string pid, comm, state, ppid;
      if (!(stat >> pid >> comm >> state >> ppid)) continue;
      if (comm.find("redis-server") != std::string::npos && std::stoi(ppid) == broker.pid()) redis_pid = std::stoi(pid);
    }
    ASSERT_GT(redis_pid, 0) << "no redis-server child of the broker";
    ASSERT_EQ(::kill(redis_pid, SIGKILL), 0);
    ASSERT_TRUE(wait_until([&] { return api.get("/ojs/v1/health").status == 200; })) << "round " << round;
    const auto info = api.get("/ojs/v1/jobs/" + id);
    EXPECT_EQ(info.status, 200) << "round " << round << ": " << info.body.dump();
    EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(redis_pid))) << "the killed redis-server was not reaped";
    EXPECT_EQ(api.post("/ojs/v1/jobs", job("h3-embedded")).status, 201);
  }
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path(), ec);
}
