// Identity bound to tokens: a worker token bound to worker ids
// (or a prefix) acts only as those workers, and with the holder checks that
// follows it cannot finish or extend another worker's job; a tenant-pinned
// token sees and cancels only its tenant's jobs and events.
#include <gtest/gtest.h>

#include <fstream>

#include "support/processes.hpp"
#include "support/role_tokens.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json job(const std::string& queue) { return {{"type", "id.task"}, {"args", json::array()}, {"options", {{"queue", queue}}}}; }

}  // namespace

class Identity : public ::testing::Test, protected RoleTokenBroker {
 protected:
  Identity() : RoleTokenBroker("identity") {}
};

TEST_F(Identity, ABoundWorkerTokenActsOnlyAsItsOwnWorkers) {
  const auto id = team_a.push(job("id-q"));
  // Another worker's id, or none at all, is refused before anything happens.
  auto r = node_a.post("/ojs/v1/workers/fetch", {{"queues", {"id-q"}}, {"worker_id", "node-b"}});
  EXPECT_EQ(r.status, 403) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "worker_id");
  EXPECT_EQ(node_a.post("/ojs/v1/workers/fetch", {{"queues", {"id-q"}}}).status, 403);
  EXPECT_EQ(pool.post("/ojs/v1/workers/fetch", {{"queues", {"id-q"}}, {"worker_id", "node-a"}}).status, 403);

  ASSERT_EQ(node_a.fetch({"id-q"}, "node-a").size(), 1u);
  // The pool token cannot finish, fail, extend or checkpoint node-a's job: without a
  // worker_id it is refused, with its own it is not the holder.
  EXPECT_EQ(pool.post("/ojs/v1/workers/ack", {{"job_id", id}}).status, 403);
  EXPECT_EQ(pool.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"message", "x"}}}}).status, 403);
  EXPECT_EQ(pool.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "node-a"}}).status, 403);
  EXPECT_EQ(pool.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "pool-1"}}).status, 409);
  EXPECT_EQ(pool.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "pool-1"}, {"error", {{"message", "x"}}}}).status, 409);
  const auto beat = pool.post("/ojs/v1/workers/heartbeat", {{"worker_id", "pool-1"}, {"active_jobs", {id}}});
  ASSERT_EQ(beat.status, 200);
  EXPECT_TRUE(beat.body["jobs_extended"].empty()) << beat.body.dump();
  EXPECT_EQ(pool.post("/ojs/v1/workers/heartbeat", {{"active_jobs", {id}}}).status, 400);
  EXPECT_EQ(pool.post("/ojs/v1/jobs/" + id + "/checkpoint", {{"step", 1}, {"storage_key", "c/1"}}).status, 403);
  EXPECT_EQ(pool.post("/ojs/v1/jobs/" + id + "/checkpoint", {{"worker_id", "pool-1"}, {"step", 1}, {"storage_key", "c/1"}}).status, 409);

  // The holder itself still works.
  EXPECT_EQ(node_a.post("/ojs/v1/jobs/" + id + "/checkpoint", {{"worker_id", "node-a"}, {"step", 1}, {"storage_key", "c/1"}}).status, 200);
  EXPECT_EQ(node_a.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "node-a"}}).status, 200);
  EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + id).body["job"]["state"], "completed");
}

TEST_F(Identity, ATenantPinnedTokenSeesAndCancelsOnlyItsTenantsJobs) {
  const auto mine = team_a.push(job("id-t"));
  const auto theirs = team_b.push(job("id-t"));
  EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + mine).status, 200);
  EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + theirs).status, 404);
  EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + theirs + "/diagnosis").status, 404);
  EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + theirs + "/checkpoint").status, 404);
  EXPECT_EQ(team_a.call("DELETE", "/ojs/v1/jobs/" + theirs).status, 404);
  EXPECT_EQ(team_b.get("/ojs/v1/jobs/" + theirs).body["job"]["state"], "available") << "team-a cancelled team-b's job";

  const auto events = team_a.get("/ojs/v1/events?queues=id-t").body["events"];
  bool saw_mine = false;
  for (const auto& e : events) {
    EXPECT_NE(e["subject"], theirs) << "team-a read an event of team-b's job";
    saw_mine = saw_mine || e["subject"] == mine;
  }
  EXPECT_TRUE(saw_mine) << events.dump();
  EXPECT_EQ(team_a.call("DELETE", "/ojs/v1/jobs/" + mine).status, 200);
}
