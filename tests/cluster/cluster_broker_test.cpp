// The broker on a real 6-node Redis Cluster (--redis redis-cluster://...): the
// public conformance levels and our ML-semantics suite pass against it (each its
// own ctest entry, conformance_cluster_*), and a master SIGKILLed under load is
// survived without a broker restart: every job completed exactly once, the GPU
// ledgers reconcile.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include "broker/store/cluster_slots.hpp"
#include "cluster/real_cluster.hpp"
#include "support/reference_dir.hpp"

namespace ojs::broker::cluster {
namespace {

using nlohmann::json;

class BrokerOnCluster : public RealCluster {
 protected:
  void SetUp() override {
    // A fresh keyspace per test: the conformance cases expect an empty broker.
    const auto map = SlotMap::from_cluster_slots(RedisPool(node(base_), 1).command({"CLUSTER", "SLOTS"}));
    for (const auto& m : map.masters()) RedisPool(node(m.port), 1).command({"FLUSHALL"});
  }
  static void run_suite(const std::vector<std::string>& folders) {
    for (const auto& f : folders) ASSERT_TRUE(std::filesystem::is_directory(f)) << "conformance cases not found: " << f;
    test::BrokerProcess broker{seeds()};
    std::vector<std::string> argv{test::binary_path("conformance/ojs-conformance"), "--url", broker.url()};
    argv.insert(argv.end(), folders.begin(), folders.end());
    const auto run = test::run_process(argv);
    std::cout << run.output << std::endl;
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_NE(run.output.find(" 0 failed"), std::string::npos);
    EXPECT_EQ(run.output.find("skipped"), std::string::npos);
  }
};

TEST_F(BrokerOnCluster, Level0Core) {
  if (const auto why = test::conformance_cases_absent(); !why.empty()) GTEST_SKIP() << why;
  run_suite({test::conformance_reference_dir() + "/level-0-core"});
}

TEST_F(BrokerOnCluster, ExtMlResources) {
  if (const auto why = test::conformance_cases_absent(); !why.empty()) GTEST_SKIP() << why;
  run_suite({test::conformance_reference_dir() + "/ext-ml-resources"});
}

TEST_F(BrokerOnCluster, MlSemantics) { run_suite({std::string(OJS_SOURCE_DIR) + "/conformance/suites/ml-semantics"}); }

json gpu_job(const std::string& queue) {
  return {{"type", "ml.task"}, {"args", json::array()}, {"options", {{"queue", queue}}}, {"ext_ml_gpu_count", 1}};
}

json gpu_capabilities() {
  return {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", 8}, {"memory_gb", 80}}}};
}

// 3,000 jobs over 30 queues, 8 workers; the master of the global slot (directories,
// worker registry) is SIGKILLed after the first 500 ACKs. Workers retry a 503 as
// the worker protocol says; the broker is never restarted.
TEST_F(BrokerOnCluster, MasterKilledUnderLoadLosesNoJob) {
  constexpr int kQueues = 30, kPerQueue = 100, kWorkers = 8, kJobs = kQueues * kPerQueue;
  test::BrokerProcess broker{seeds(), {"--visibility-timeout-ms", "5000"}};
  test::Api api(broker.url());
  std::vector<std::string> queues;
  for (int q = 0; q < kQueues; ++q) queues.push_back("fo-" + std::to_string(q));
  std::set<std::string> pushed;
  for (const auto& q : queues) {
    json batch = json::array();
    for (int i = 0; i < kPerQueue; ++i) batch.push_back(gpu_job(q));
    const auto r = api.post("/ojs/v1/jobs/batch", {{"jobs", batch}});
    ASSERT_EQ(r.status, 201) << r.body.dump();
    for (const auto& j : r.body["jobs"]) pushed.insert(j["id"].get<std::string>());
  }
  ASSERT_EQ(pushed.size(), static_cast<std::size_t>(kJobs));

  std::mutex mutex;
  std::map<std::string, int> acked;  // job id -> ACKs answered 200
  std::map<std::string, bool> first_sent_before_kill;  // job id -> its first 200 ACK was sent before the SIGKILL
  std::atomic<bool> killed{false};
  std::atomic<int> acks{0}, unavailable{0}, ack_conflicts{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      test::Api client(broker.url());
      const std::string id = "fo-worker-" + std::to_string(w);
      std::vector<std::string> order(queues.begin() + w, queues.end());  // each worker its own queue order
      order.insert(order.end(), queues.begin(), queues.begin() + w);
      while (!stop) {
        const auto r = client.post("/ojs/v1/workers/fetch",
                                   {{"queues", order}, {"worker_id", id}, {"count", 1}, {"capabilities", gpu_capabilities()}});
        if (r.status != 200 || r.body["jobs"].empty()) {
          if (r.status == 503) ++unavailable;
          std::this_thread::sleep_for(std::chrono::milliseconds(r.status == 200 ? 20 : 100));
          continue;
        }
        const auto job_id = r.body["jobs"][0]["id"].get<std::string>();
        for (int attempt = 0; attempt < 300 && !stop; ++attempt) {  // a 503 is retried, as the protocol says
          const bool before_kill = !killed;
          const auto a = client.post("/ojs/v1/workers/ack", {{"job_id", job_id}, {"worker_id", id}});
          if (a.status == 503) {
            ++unavailable;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
          }
          if (a.status == 200) {
            std::lock_guard lock(mutex);
            if (++acked[job_id] == 1) first_sent_before_kill[job_id] = before_kill;
            ++acks;
          } else {
            ++ack_conflicts;  // completed by a retried ACK whose first reply was lost, or reclaimed
          }
          break;
        }
      }
    });
  }

  auto wait_for = [&](auto done, int seconds) {
    for (int i = 0; i < seconds * 10 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return done();
  };
  EXPECT_TRUE(wait_for([&] { return acks >= 500; }, 120)) << acks;
  const auto map = SlotMap::from_cluster_slots(RedisPool(node(base_), 1).command({"CLUSTER", "SLOTS"}));
  const int victim = map.master_of(key_slot("_global"))->port;
  std::ifstream pidfile(dir_ + "/node-" + std::to_string(victim - base_) + "/redis.pid");
  pid_t pid = 0;
  pidfile >> pid;
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  killed = true;
  const int acks_at_kill = acks;
  EXPECT_TRUE(wait_for([&] {
    std::lock_guard lock(mutex);
    return acked.size() == static_cast<std::size_t>(kJobs);
  }, 300)) << "completed " << acked.size() << " of " << kJobs;
  stop = true;
  for (auto& t : workers) t.join();

  // Its replica took over the global slot; the broker kept serving.
  const auto after = SlotMap::from_cluster_slots(RedisPool(node(victim == base_ ? base_ + 1 : base_), 1).command({"CLUSTER", "SLOTS"}));
  EXPECT_NE(after.master_of(key_slot("_global"))->port, victim);
  EXPECT_EQ(api.get("/ojs/v1/health").status, 200);

  // Every job pushed was ACKed with 200, and is completed. Once, but for what a failover
  // may lose (docs/operations.md, "What a failover can lose"): replication is asynchronous,
  // so an ACK the old master applied and answered just before it died can be undone; the
  // job is active again, the reaper returns it after its visibility timeout and it is
  // ACKed a second time. Only an ACK sent before the kill can be lost that way: a job
  // ACKed twice whose first ACK came after it, or three times, is a double delivery.
  int lost_acks = 0;
  for (const auto& [id, n] : acked) {
    if (n == 1) continue;
    EXPECT_EQ(n, 2) << id;
    EXPECT_TRUE(first_sent_before_kill[id]) << id << " was ACKed twice, the first time after the kill";
    ++lost_acks;
  }
  for (const auto& id : pushed) {
    ASSERT_EQ(acked.count(id), 1u) << id << " was never completed; the job now: " << api.get("/ojs/v1/jobs/" + id).body.dump()
                                   << " (ACKs answered neither 200 nor 503: " << ack_conflicts << ")";
  }
  int completed = 0;
  for (const auto& id : pushed) completed += api.get("/ojs/v1/jobs/" + id).body["job"]["state"] == "completed";
  EXPECT_EQ(completed, kJobs);
  // Every GPU ledger reconciles to the active jobs (none left).
  for (const auto& q : queues) {
    const auto check = api.get("/ojs/v1/admin/queues/" + q + "/reconcile").body["reconciliation"];
    EXPECT_TRUE(check["consistent"].get<bool>()) << q << ": " << check.dump();
    EXPECT_EQ(check["ledger"]["gpus"], 0) << q << ": " << check.dump();
  }
  std::cout << "failover: " << acks_at_kill << " ACKs before the kill, " << lost_acks << " lost with the old master, " << unavailable << " 503 answers, "
            << ack_conflicts << " ACKs answered non-200" << std::endl;
}

// --redis-replica-acks on a cluster: each master's share of a
// writing round trip ends with WAIT there, so an ACK answered 200 is on the replica
// that would take over; with that replica stalled, the ACK is 503 and is retried.
TEST_F(BrokerOnCluster, AnAckIsAnsweredOnlyOnceTheReplicaHasIt) {
  const std::string q = "wait-q";
  // The replica of the master serving the queue's slot, from CLUSTER NODES ("id
  // host:port@bus flags master-id ..."; CLUSTER SLOTS may list no replica yet).
  const auto map = SlotMap::from_cluster_slots(RedisPool(node(base_), 1).command({"CLUSTER", "SLOTS"}));
  const int master_port = map.master_of(key_slot(q))->port;
  std::vector<std::vector<std::string>> nodes;
  std::istringstream text(RedisPool(node(base_), 1).command({"CLUSTER", "NODES"}).str);
  for (std::string line; std::getline(text, line);) {
    std::istringstream fields(line);
    nodes.emplace_back(std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>());
  }
  std::string master_id;
  for (const auto& n : nodes)
    if (n.size() > 3 && n[1].rfind("127.0.0.1:" + std::to_string(master_port) + "@", 0) == 0) master_id = n[0];
  int replica_port = 0;
  for (const auto& n : nodes)
    if (n.size() > 3 && n[3] == master_id && n[2].find("slave") != std::string::npos)
      replica_port = std::stoi(n[1].substr(n[1].find(':') + 1));
  ASSERT_GT(replica_port, 0) << "no replica serves the queue's slot";
  pid_t replica = 0;
  std::ifstream(dir_ + "/node-" + std::to_string(replica_port - base_) + "/redis.pid") >> replica;
  ASSERT_GT(replica, 0);

  // Long enough for a healthy replica on a loaded machine: only the stalled one misses it.
  test::BrokerProcess broker{seeds(), {"--redis-replica-acks", "1", "--redis-replica-wait-ms", "3000"}};
  test::Api api(broker.url());
  const auto id = api.push(gpu_job(q));
  const auto got = api.fetch({q}, "wait-w", 1, {{"capabilities", gpu_capabilities()}});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(kill(replica, SIGSTOP), 0);
  const auto stalled = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "wait-w"}});
  ASSERT_EQ(kill(replica, SIGCONT), 0);
  EXPECT_EQ(stalled.status, 503) << stalled.body.dump();
  int status = 0;
  for (int attempt = 0; attempt < 100 && status != 200; ++attempt) {  // the worker's retry, while the replica catches up
    status = static_cast<int>(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "wait-w"}}).status);
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 200);
  RedisPool replica_pool(node(replica_port), 1);
  EXPECT_EQ(replica_pool.pipeline({{"READONLY"}, {"HGET", "ojs:{" + q + "}:job:" + id, "state"}}).back().str, "completed");
}

}  // namespace
}  // namespace ojs::broker::cluster
