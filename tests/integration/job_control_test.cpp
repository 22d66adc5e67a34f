// Holding and updating a waiting job: POST /jobs/{id}/hold and /release
// take a job out of scheduling and put it back where it was; PATCH /jobs/{id}
// changes its priority and ext_ml_* attributes, validated as PUSH validates them and
// re-classed in one step. Producers act on their tenant's jobs only, admins on all.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"
#include "support/role_tokens.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json caps(const std::string& name) { return {{"capabilities", example_worker(name)}}; }
std::string job_path(const std::string& id) { return "/ojs/v1/jobs/" + id; }

}  // namespace

class JobControl : public ::testing::Test, protected RoleTokenBroker {
 protected:
  JobControl() : RoleTokenBroker("job_control") {}
};

TEST_F(JobControl, AHeldJobIsSkippedByFetchUntilReleased) {
  const auto first = team_a.push(job_in("jc-hold"));
  const auto second = team_a.push(job_in("jc-hold"));

  auto held = team_a.post(job_path(first) + "/hold", json::object());
  ASSERT_EQ(held.status, 200) << held.body.dump();
  EXPECT_EQ(held.body["job"]["state"], "pending");
  EXPECT_EQ(held.body["job"]["held_by"], "team-a");
  // Holding it again changes nothing (who held it first stays).
  EXPECT_EQ(admin.post(job_path(first) + "/hold", json::object()).body["job"]["held_by"], "team-a");

  auto why = team_a.get(job_path(first) + "/diagnosis");
  ASSERT_EQ(why.status, 200) << why.body.dump();
  EXPECT_EQ(why.body["diagnosis"]["held_by"], "team-a");
  EXPECT_NE(why.body["diagnosis"]["message"].get<std::string>().find("held by team-a"), std::string::npos) << why.body.dump();
  // Held jobs are listed as state pending (squeue's held jobs).
  auto listed = admin.get("/ojs/v1/admin/jobs?state=pending&queue=jc-hold");
  ASSERT_EQ(listed.status, 200) << listed.body.dump();
  ASSERT_EQ(listed.body["items"].size(), 1u) << listed.body.dump();
  EXPECT_EQ(listed.body["items"][0]["id"], first);
  EXPECT_EQ(listed.body["pagination"]["total"], 1);

  // FETCH passes over the held job: the one behind it comes first, then nothing.
  auto got = pool.fetch({"jc-hold"}, "pool-1");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], second);
  EXPECT_EQ(pool.fetch({"jc-hold"}, "pool-1").size(), 0u);

  // A running job cannot be held; a job that is not held cannot be released.
  EXPECT_EQ(team_a.post(job_path(second) + "/hold", json::object()).status, 409);
  EXPECT_EQ(team_a.post(job_path(second) + "/release", json::object()).status, 409);

  auto released = team_a.post(job_path(first) + "/release", json::object());
  ASSERT_EQ(released.status, 200) << released.body.dump();
  EXPECT_EQ(released.body["job"]["state"], "available");
  EXPECT_FALSE(released.body["job"].contains("held_by"));
  got = pool.fetch({"jc-hold"}, "pool-1");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], first);
}

TEST_F(JobControl, AHeldScheduledJobReturnsToItsSchedule) {
  json j = job_in("jc-sched");
  j["scheduled_at"] = iso_in(std::chrono::hours(1));
  const auto id = team_a.push(j);
  ASSERT_EQ(team_a.post(job_path(id) + "/hold", json::object()).status, 200);
  auto released = team_a.post(job_path(id) + "/release", json::object());
  ASSERT_EQ(released.status, 200) << released.body.dump();
  EXPECT_EQ(released.body["job"]["state"], "scheduled");
  // And a held job can be cancelled like any waiting one.
  ASSERT_EQ(team_a.post(job_path(id) + "/hold", json::object()).status, 200);
  EXPECT_EQ(team_a.call("DELETE", job_path(id)).body["job"]["state"], "cancelled");
}

TEST_F(JobControl, PatchReclassesAJobSoAnotherWorkerTakesIt) {
  const auto id = team_a.push(ml_job("jc-patch", {{"ext_ml_gpu_type", "nvidia-h100"}, {"ext_ml_gpu_count", 1}}));
  EXPECT_EQ(pool.fetch({"jc-patch"}, "pool-a100", 1, caps("4xa100-pcie")).size(), 0u);

  auto patched = team_a.call("PATCH", job_path(id), {{"ext_ml_gpu_type", "nvidia-a100"}, {"priority", 7},
                                                     {"ext_ml_priority_class", "reserved"}});
  ASSERT_EQ(patched.status, 200) << patched.body.dump();
  EXPECT_EQ(patched.body["job"]["ext_ml_gpu_type"], "nvidia-a100");
  EXPECT_EQ(patched.body["job"]["priority"], 7);
  EXPECT_EQ(patched.body["job"]["state"], "available");

  EXPECT_EQ(pool.fetch({"jc-patch"}, "pool-h100", 1, caps("dgx-h100")).size(), 0u);
  auto got = pool.fetch({"jc-patch"}, "pool-a100", 1, caps("4xa100-pcie"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], id);

  // A running job changes its priority (its rank among preemption victims) and runs
  // on; its requirements no longer change: 409 naming the field.
  auto late = team_a.call("PATCH", job_path(id), {{"priority", 1}});
  EXPECT_EQ(late.status, 200) << late.body.dump();
  EXPECT_EQ(late.body["job"]["state"], "active");
  EXPECT_EQ(late.body["job"]["attempt"], 1);
  late = team_a.call("PATCH", job_path(id), {{"ext_ml_gpu_type", "nvidia-h100"}});
  EXPECT_EQ(late.status, 409) << late.body.dump();
  EXPECT_NE(late.body.dump().find("ext_ml_gpu_type"), std::string::npos) << late.body.dump();
}

// #47.9: each distinct PATCH left a requirement class behind for good; FETCH, the
// estimate and promotion re-read them all. A class goes with its last job.
TEST_F(JobControl, AClassGoesWithItsLastJob) {
  const std::string q = "jc-classes";
  const std::string classes_key = "ojs:{" + q + "}:classes";
  auto classes = [&] {
    std::vector<std::string> out;
    for (const auto& f : redis_lines(redis, {"HKEYS", classes_key}))
      if (!f.empty() && f[0] != '#') out.push_back(f);
    return out;
  };
  const auto stays = team_a.push(ml_job(q, {{"ext_ml_gpu_type", "nvidia-h100"}, {"ext_ml_gpu_count", 1}}));
  const auto moved = team_a.push(ml_job(q, {{"ext_ml_gpu_type", "nvidia-h100"}, {"ext_ml_gpu_count", 1}}));
  ASSERT_EQ(classes().size(), 1u);
  for (int vram = 1; vram <= 30; ++vram) {
    auto r = team_a.call("PATCH", job_path(moved), {{"ext_ml_gpu_type", "nvidia-a100"}, {"ext_ml_gpu_memory_gb", vram}});
    ASSERT_EQ(r.status, 200) << r.body.dump();
  }
  // The first class still holds `stays`; of the 30 classes `moved` went through, its last.
  EXPECT_EQ(classes().size(), 2u);
  EXPECT_EQ(team_a.get(job_path(moved)).body["job"]["ext_ml_gpu_memory_gb"], 30);
  auto got = pool.fetch({q}, "pool-a100", 1, caps("4xa100-pcie"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], moved);
  ASSERT_EQ(pool.post("/ojs/v1/workers/ack", {{"job_id", moved}, {"worker_id", "pool-a100"}}).status, 200);
  // A finished job keeps its class (a retry goes back into it) until it is purged.
  EXPECT_EQ(classes().size(), 2u);
  auto purged = admin.call("DELETE", "/ojs/v1/admin/queues/" + q + "/jobs", {{"states", {"completed"}}, {"confirm", true}});
  ASSERT_EQ(purged.status, 200) << purged.body.dump();
  EXPECT_EQ(purged.body["purged_count"], 1);
  EXPECT_EQ(classes().size(), 1u);
  got = pool.fetch({q}, "pool-h100", 1, caps("dgx-h100"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], stays);

  // A class stored before jobs were counted (no '#' entry) is never dropped: other
  // jobs stored then may still name it.
  const auto legacy = team_a.push(ml_job(q, {{"ext_ml_gpu_type", "nvidia-l4"}, {"ext_ml_gpu_count", 1}}));
  std::string l4_class;
  for (const auto& c : classes())
    if (redis_lines(redis, {"HGET", classes_key, c}).front().find("nvidia-l4") != std::string::npos) l4_class = c;
  ASSERT_FALSE(l4_class.empty());
  redis_lines(redis, {"HDEL", classes_key, "#" + l4_class});
  ASSERT_EQ(team_a.call("PATCH", job_path(legacy), {{"ext_ml_gpu_type", "nvidia-a100"}}).status, 200);
  const auto left = classes();
  EXPECT_NE(std::find(left.begin(), left.end(), l4_class), left.end()) << "an untracked class was dropped";
}

TEST_F(JobControl, PatchOfAHeldJobKeepsItHeldInItsNewClass) {
  const auto id = team_a.push(ml_job("jc-held-patch", {{"ext_ml_gpu_type", "nvidia-h100"}}));
  ASSERT_EQ(team_a.post(job_path(id) + "/hold", json::object()).status, 200);
  auto patched = team_a.call("PATCH", job_path(id), {{"ext_ml_gpu_type", "nvidia-a100"}});
  ASSERT_EQ(patched.status, 200) << patched.body.dump();
  EXPECT_EQ(patched.body["job"]["state"], "pending");
  EXPECT_EQ(pool.fetch({"jc-held-patch"}, "pool-a100", 1, caps("4xa100-pcie")).size(), 0u);
  ASSERT_EQ(team_a.post(job_path(id) + "/release", json::object()).status, 200);
  EXPECT_EQ(pool.fetch({"jc-held-patch"}, "pool-a100", 1, caps("4xa100-pcie")).size(), 1u);
}

TEST_F(JobControl, PatchIsValidatedAsPushIs) {
  const auto id = team_a.push(ml_job("jc-valid", {{"ext_ml_gpu_count", 1}}));
  auto r = team_a.call("PATCH", job_path(id), {{"priority", "high"}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "priority");
  r = team_a.call("PATCH", job_path(id), {{"ext_ml_gpu_count", -2}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_gpu_count");
  r = team_a.call("PATCH", job_path(id), {{"ext_ml_priority_class", "urgent-ish"}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_priority_class");
  // Only priority and ext_ml_* attributes change after PUSH.
  r = team_a.call("PATCH", job_path(id), {{"type", "other"}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "type");
  r = team_a.call("PATCH", job_path(id), {{"ext_ml_gang", {{"size", 2}}}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_gang");
  r = team_a.call("PATCH", job_path(id), json::object());
  EXPECT_EQ(r.status, 400) << r.body.dump();
  // Nothing was changed by the refusals.
  EXPECT_EQ(team_a.get(job_path(id)).body["job"]["ext_ml_gpu_count"], 1);
}

TEST_F(JobControl, OnlyTheTenantsProducerOrAnAdminMayHoldOrPatch) {
  const auto id = team_a.push(job_in("jc-roles"));
  // Another tenant's producer sees no such job, as with INFO and CANCEL.
  EXPECT_EQ(team_b.post(job_path(id) + "/hold", json::object()).status, 404);
  EXPECT_EQ(team_b.call("PATCH", job_path(id), {{"priority", 3}}).status, 404);
  EXPECT_EQ(team_b.post(job_path(id) + "/release", json::object()).status, 404);
  // A worker token may not change jobs at all.
  EXPECT_EQ(node_a.post(job_path(id) + "/hold", json::object()).status, 403);
  EXPECT_EQ(node_a.call("PATCH", job_path(id), {{"priority", 3}}).status, 403);
  // An admin may, whoever pushed it.
  auto held = admin.post(job_path(id) + "/hold", json::object());
  ASSERT_EQ(held.status, 200) << held.body.dump();
  EXPECT_EQ(held.body["job"]["held_by"], "ops");
  EXPECT_EQ(admin.call("PATCH", job_path(id), {{"priority", 3}}).status, 200);
  EXPECT_EQ(team_a.post(job_path(id) + "/release", json::object()).status, 200);
}
