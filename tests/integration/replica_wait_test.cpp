// --redis-replica-acks: a write is answered as done only once the replicas confirm
// it, so a failover cannot undo an ACK answered 200 or a PUSH answered 201. A real
// master and replica; the replica stalled with SIGSTOP. The wait is long enough for a
// healthy replica on a loaded machine: only the stalled one may miss it.
#include <gtest/gtest.h>
#include <signal.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

bool replica_in_sync(const RedisServer& master) {
  for (const auto& line : redis_lines(master, {"INFO", "replication"}))
    if (line.find("slave0:") == 0 && line.find("state=online") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(ReplicaWait, AWriteNoReplicaConfirmedIsNotAnsweredAsDone) {
  RedisServer master, replica;
  redis_lines(replica, {"REPLICAOF", "127.0.0.1", std::to_string(master.port())});
  ASSERT_TRUE(wait_until([&] { return replica_in_sync(master); }, 30)) << "the replica never caught up";
  BrokerProcess broker{master.url(), {"--redis-replica-acks", "1", "--redis-replica-wait-ms", "3000"}};
  Api api{broker.url()};

  const auto id = api.push(job_in("rw-q"));
  auto got = api.fetch({"rw-q"}, "rw-w");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], id);

  ASSERT_EQ(kill(replica.pid(), SIGSTOP), 0);
  // The master writes, the replica cannot confirm: not done as far as anyone is told.
  const auto ack = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "rw-w"}});
  EXPECT_EQ(ack.status, 503) << ack.body.dump();
  const auto push = api.post("/ojs/v1/jobs", job_in("rw-q"));
  EXPECT_EQ(push.status, 504) << push.body.dump();  // written on the master: its id, to resend
  const auto minted = push.body["error"]["details"]["job_id"].get<std::string>();
  ASSERT_EQ(kill(replica.pid(), SIGCONT), 0);

  // The worker retries its ACK, the producer its PUSH under the id it was given.
  ASSERT_TRUE(wait_until([&] { return replica_in_sync(master); }, 30));
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "rw-w"}}).status, 200);
  json again = job_in("rw-q");
  again["id"] = minted;
  EXPECT_EQ(api.post("/ojs/v1/jobs", again).status, 409);  // stored by the first try, once
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["state"], "completed");
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + minted).body["job"]["state"], "available");
  // What was replicated is on the replica.
  EXPECT_EQ(redis_lines(replica, {"HGET", "ojs:{rw-q}:job:" + id, "state"}).front(), "completed");
}

TEST(ReplicaWait, MoreReplicasThanThereAreRefusesEveryWrite) {
  RedisServer master;
  BrokerProcess broker{master.url(), {"--redis-replica-acks", "1", "--redis-replica-wait-ms", "50"}};
  Api api{broker.url()};
  const auto r = api.post("/ojs/v1/jobs", job_in("rw-none"));
  EXPECT_EQ(r.status, 504) << r.body.dump();
  EXPECT_NE(r.body.dump().find("replicas"), std::string::npos) << r.body.dump();
  // Reads still answer.
  EXPECT_EQ(api.get("/ojs/v1/queues").status, 200);
}
