// A job is stored once: its hash holds the document less what its fields hold (id,
// queue, type) and what every job shares unless it says otherwise (specversion 1.0,
// an empty meta, the default retry policy), and no field repeats the document's
// priority, attempts or GPUs (JobRecord::stored_document). The envelope puts them
// back, byte for byte the same job to every reader. A job stored before, whole
// document and repeated fields, keeps working after an upgrade.
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

std::string job_key(const std::string& queue, const std::string& id) { return "ojs:{" + queue + "}:job:" + id; }

json gpu_job(const std::string& queue) {
  json job = ml_job(queue, {{"ext_ml_gpu_count", 2}});
  job["options"]["priority"] = 5;
  return job;
}

}  // namespace

TEST(StoredOnce, TheHashHoldsTheDocumentOnceAndTheEnvelopeIsWhole) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto id = api.push(gpu_job("once-q"));

  const json stored = json::parse(redis_value(redis, {"HGET", job_key("once-q", id), "doc"}));
  for (const char* left_out : {"id", "queue", "type", "specversion", "meta", "retry"})
    EXPECT_FALSE(stored.contains(left_out)) << left_out << " is stored again in " << stored.dump();
  EXPECT_EQ(stored["priority"], 5);
  for (const char* field : {"priority", "max_attempts", "gpus"})
    EXPECT_EQ(redis_value(redis, {"HEXISTS", job_key("once-q", id), field}), "0") << field << " repeats the document";

  const auto info = api.get("/ojs/v1/jobs/" + id);
  ASSERT_EQ(info.status, 200) << info.body.dump();
  const json& job = info.body["job"];
  EXPECT_EQ(job["id"], id);
  EXPECT_EQ(job["queue"], "once-q");
  EXPECT_EQ(job["type"], "ml.task");
  EXPECT_EQ(job["specversion"], "1.0");
  EXPECT_EQ(job["meta"], json::object());
  EXPECT_EQ(job["retry"]["max_attempts"], 3) << job.dump();
  EXPECT_EQ(job["retry"]["initial_interval"], "PT1S") << job.dump();
  EXPECT_EQ(job["priority"], 5);

  const auto listed = api.get("/ojs/v1/admin/queues/once-q/jobs?state=available");
  ASSERT_EQ(listed.status, 200) << listed.body.dump();
  ASSERT_EQ(listed.body["jobs"].size(), 1u) << listed.body.dump();
  EXPECT_EQ(listed.body["jobs"][0]["priority"], 5) << "read from the document";
  EXPECT_EQ(listed.body["jobs"][0]["gpus"], 2) << "read from the document";

  const auto fetched = api.fetch({"once-q"}, "once-w", 1, {{"capabilities", example_worker("dgx-h100")}});
  ASSERT_EQ(fetched.size(), 1u);
  EXPECT_EQ(fetched[0]["retry"], job["retry"]) << "FETCH renders the same envelope";
  EXPECT_EQ(fetched[0]["type"], "ml.task");
}

// What a producer said is kept even where it equals nothing shared: its own retry
// policy, its meta, its spec version.
TEST(StoredOnce, WhatTheProducerSaidIsKept) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  json job = job_in("said-q");
  job["meta"] = {{"owner", "ana"}};
  job["options"]["retry"] = {{"max_attempts", 7}, {"initial_interval", "PT2S"}};
  const auto id = api.push(job);
  const json stored = json::parse(redis_value(redis, {"HGET", job_key("said-q", id), "doc"}));
  EXPECT_EQ(stored["meta"]["owner"], "ana");
  EXPECT_EQ(stored["retry"]["max_attempts"], 7) << stored.dump();
  const auto info = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(info["retry"]["max_attempts"], 7);
  EXPECT_EQ(info["retry"]["initial_interval"], "PT2S");
  EXPECT_EQ(info["meta"]["owner"], "ana");
}

// A job stored by a broker before this layout: the whole document, and priority,
// max_attempts and gpus as fields too. The fields are read first (they held the
// truth then), the job is fetched, failed and retried by them, listed, and a PATCH
// moves it to the new layout.
TEST(StoredOnce, AJobStoredBeforeKeepsWorkingAfterAnUpgrade) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto id = api.push(gpu_job("old-q"));
  const auto key = job_key("old-q", id);
  // Rewrite it as the earlier broker stored it: every member in the document, and
  // the repeated fields (their values differ from the document's here, so the test
  // tells which one is read).
  json whole = api.get("/ojs/v1/jobs/" + id).body["job"];
  for (const char* system : {"state", "attempt", "created_at", "enqueued_at"}) whole.erase(system);
  ASSERT_EQ(redis_value(redis, {"HSET", key, "doc", whole.dump(), "priority", "9", "max_attempts", "1", "gpus", "2"}), "3");

  auto info = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(info["id"], id);
  EXPECT_EQ(info["retry"], whole["retry"]);
  const auto listed = api.get("/ojs/v1/admin/queues/old-q/jobs?state=available").body;
  ASSERT_EQ(listed["jobs"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["jobs"][0]["priority"], 9) << "the old field is read first";

  // max_attempts 1 as a field: one failed attempt ends the job, though the
  // document's retry policy allows 3.
  const json caps = {{"capabilities", example_worker("dgx-h100")}};
  auto fetched = api.fetch({"old-q"}, "old-w", 1, caps);
  ASSERT_EQ(fetched.size(), 1u);
  EXPECT_EQ(fetched[0]["id"], id);
  EXPECT_EQ(fetched[0]["queue"], "old-q");
  const auto failed = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "old-w"},
                                                       {"error", {{"type", "Boom"}, {"message", "failed"}}}});
  ASSERT_EQ(failed.status, 200) << failed.body.dump();
  info = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(info["state"], "discarded") << "the stored max_attempts field bounds it: " << info.dump();

  // A waiting old job changed by PATCH: the repeated fields go, the document's values are read.
  const auto other = api.push(gpu_job("old-q"));
  const auto other_key = job_key("old-q", other);
  ASSERT_EQ(redis_value(redis, {"HSET", other_key, "priority", "9", "max_attempts", "1", "gpus", "2"}), "3");
  const auto patched = api.call("PATCH", "/ojs/v1/jobs/" + other, {{"priority", 3}});
  ASSERT_EQ(patched.status, 200) << patched.body.dump();
  for (const char* field : {"priority", "max_attempts", "gpus"})
    EXPECT_EQ(redis_value(redis, {"HEXISTS", other_key, field}), "0") << field << " outlived the update";
  const auto relisted = api.get("/ojs/v1/admin/queues/old-q/jobs?state=available").body;
  ASSERT_EQ(relisted["jobs"].size(), 1u) << relisted.dump();
  EXPECT_EQ(relisted["jobs"][0]["priority"], 3);
}
