// Queues over HTTP, as the handlers now reach them through QueueService
// (api/queues_api.cpp, admin_api.cpp, events_api.cpp): the listing with each
// queue's pause flag, stats, pause/resume on both paths, deletion (404 unknown,
// 409 while a job is held, 200 when empty), the event endpoints' queue check,
// the admin totals, and --max-queues for a queue first named by a pause.
#include <gtest/gtest.h>

#include <future>
#include <map>

#include "support/processes.hpp"
#include "support/redis_gate.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json job_in(const std::string& queue) { return {{"type", "t"}, {"args", json::array()}, {"options", {{"queue", queue}}}}; }

// GET /ojs/v1/queues as name -> status.
std::map<std::string, std::string> listed(Api& api) {
  const auto r = api.get("/ojs/v1/queues");
  EXPECT_EQ(r.status, 200) << r.body.dump();
  std::map<std::string, std::string> out;
  for (const auto& q : r.body["queues"]) out[q["name"].get<std::string>()] = q["status"].get<std::string>();
  EXPECT_EQ(r.body["pagination"]["total"], out.size());
  return out;
}

}  // namespace

TEST(QueueAdmin, ListPauseResumeAndDeleteOverHttp) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  api.push(job_in("qa-a"));
  api.push(job_in("qa-a"));
  const auto held = api.push(job_in("qa-b"));
  EXPECT_EQ(listed(api), (std::map<std::string, std::string>{{"qa-a", "active"}, {"qa-b", "active"}}));

  // Pause under /ojs/v1/admin: the flag shows in the listing, the stats and the admin detail.
  auto paused = api.post("/ojs/v1/admin/queues/qa-b/pause", json::object());
  ASSERT_EQ(paused.status, 200) << paused.body.dump();
  EXPECT_EQ(paused.body["queue"]["name"], "qa-b");
  EXPECT_EQ(paused.body["paused"], true);
  EXPECT_EQ(listed(api), (std::map<std::string, std::string>{{"qa-a", "active"}, {"qa-b", "paused"}}));
  auto stats = api.get("/ojs/v1/queues/qa-b/stats");
  ASSERT_EQ(stats.status, 200) << stats.body.dump();
  EXPECT_EQ(stats.body["status"], "paused");
  EXPECT_EQ(stats.body["stats"]["available"], 1);
  auto detail = api.get("/ojs/v1/admin/queues/qa-b");
  ASSERT_EQ(detail.status, 200) << detail.body.dump();
  EXPECT_EQ(detail.body["state"], "paused");
  EXPECT_EQ(detail.body["counts"]["available"], 1);
  EXPECT_EQ(api.fetch({"qa-b"}, "w").size(), 0u);
  EXPECT_EQ(api.post("/ojs/v1/queues/qa-b/resume", json::object()).body["paused"], false);
  EXPECT_EQ(api.get("/ojs/v1/queues/qa-b/stats").body["paused"], false);

  // An unknown queue is a 404 naming it, on every route that needs an existing one.
  for (const std::string path : {"/ojs/v1/queues/qa-none/stats", "/ojs/v1/queues/qa-none/diagnosis",
                                 "/ojs/v1/admin/queues/qa-none", "/ojs/v1/queues/qa-none/events"}) {
    auto r = api.get(path);
    EXPECT_EQ(r.status, 404) << path << " " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["queue"], "qa-none") << path;
  }

  // Totals across queues, and the event poll across every queue when none is named.
  auto totals = api.get("/ojs/v1/admin/stats");
  ASSERT_EQ(totals.status, 200) << totals.body.dump();
  EXPECT_EQ(totals.body["queues"], 2);
  EXPECT_EQ(totals.body["jobs"]["available"], 3);
  std::map<std::string, int> enqueued;
  const auto polled = api.get("/ojs/v1/events?types=job.enqueued");
  for (const auto& e : polled.body["events"]) ++enqueued[e["data"]["queue"].get<std::string>()];
  EXPECT_EQ(enqueued, (std::map<std::string, int>{{"qa-a", 2}, {"qa-b", 1}}));

  // Deletion: refused while the queue holds a job, done once it is empty, then unknown.
  auto refused = api.call("DELETE", "/ojs/v1/admin/queues/qa-b");
  EXPECT_EQ(refused.status, 409) << refused.body.dump();
  EXPECT_EQ(refused.body["error"]["details"]["rule"], "only an empty queue can be deleted");
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + held).status, 200);
  auto deleted = api.call("DELETE", "/ojs/v1/admin/queues/qa-b");
  ASSERT_EQ(deleted.status, 200) << deleted.body.dump();
  EXPECT_EQ(deleted.body["queue"], (json{{"name", "qa-b"}, {"deleted", true}}));
  EXPECT_EQ(listed(api), (std::map<std::string, std::string>{{"qa-a", "active"}}));
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/queues/qa-b").status, 404);

  // A queue first named by a resume exists from then on.
  ASSERT_EQ(api.post("/ojs/v1/queues/qa-c/resume", json::object()).status, 200);
  EXPECT_EQ(listed(api), (std::map<std::string, std::string>{{"qa-a", "active"}, {"qa-c", "active"}}));
}

TEST(QueueAdmin, PauseOfANewQueueCountsAgainstMaxQueues) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--max-queues", "1"}};
  Api api{broker.url()};
  api.push(job_in("qa-one"));
  auto over = api.post("/ojs/v1/queues/qa-two/pause", json::object());
  EXPECT_EQ(over.status, 422) << over.body.dump();
  EXPECT_EQ(over.body["error"]["details"]["limit"], "max_queues");
  EXPECT_EQ(listed(api), (std::map<std::string, std::string>{{"qa-one", "active"}}));
  EXPECT_EQ(api.post("/ojs/v1/queues/qa-one/pause", json::object()).status, 200) << "an existing queue is within the bound";
}

// A PUSH of a new requirement class between the delete's start and its script: the
// gate holds the delete's FCALL until the PUSH has answered, the interleaving that
// once stranded the job (the script counted only the classes read before it ran,
// then deleted `classes` and the heads: the job stayed in a ready set no claim reads).
// The script now reads the classes itself: the delete is refused, the job is served.
TEST(QueueAdmin, DeleteRacingAPushOfANewClassStrandsNoJob) {
  RedisServer redis;
  RedisGate gate{redis.port()};
  BrokerProcess broker{gate.url()};
  Api api{broker.url()};
  // The queue exists with one (default) class and no job.
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + api.push(job_in("qa-race"))).status, 200);

  gate.hold("\r\ndelete_queue_");  // the delete's FCALL (delete_queue_<library hash>)
  auto deleting = std::async(std::launch::async, [&] {
    Api admin{broker.url()};
    return admin.call("DELETE", "/ojs/v1/admin/queues/qa-race");
  });
  ASSERT_TRUE(gate.wait_held(30000)) << "the delete never reached its script";
  json gpu_job = job_in("qa-race");
  gpu_job["ext_ml_gpu_count"] = 1;  // a class the queue has never seen
  const auto id = api.push(gpu_job);
  gate.release();
  const auto deleted = deleting.get();
  EXPECT_EQ(deleted.status, 409) << deleted.body.dump();

  const json gpu_worker = {{"capabilities", {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", 8}, {"memory_gb", 80}}}}}};
  const auto fetched = api.fetch({"qa-race"}, "w-race", 1, gpu_worker);
  ASSERT_EQ(fetched.size(), 1u) << "the job pushed during the delete is stranded";
  EXPECT_EQ(fetched[0]["id"], id);
}
