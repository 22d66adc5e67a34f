// A job in a Lua reply is field/value pairs: a later pair overrides an earlier one
// and a nil value deletes the field (_lib.lua job_reply extends the hash it read).
#include <gtest/gtest.h>

#include "broker/store/job_record.hpp"

using ojs::broker::JobRecord;
using ojs::broker::RedisValue;

namespace {

RedisValue text(const std::string& s) {
  RedisValue v;
  v.type = RedisValue::Type::string;
  v.str = s;
  return v;
}

}  // namespace

TEST(JobRecord, LaterPairsOverrideAndNilDeletes) {
  RedisValue reply;
  reply.type = RedisValue::Type::array;
  for (const char* s : {"id", "j1", "state", "available", "error", "{\"code\":\"x\"}", "attempt", "1"}) reply.elements.push_back(text(s));
  for (const char* s : {"state", "completed", "attempt", "2"}) reply.elements.push_back(text(s));
  reply.elements.push_back(text("error"));
  reply.elements.push_back(RedisValue{});  // nil: deleted
  const auto job = JobRecord::from_flat_array(reply);
  EXPECT_EQ(job.state(), "completed");
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_FALSE(job.has("error"));
  EXPECT_EQ(job.id(), "j1");
}

// What a held job weighs on a worker (the held sets are verified with it): the
// holder's GPUs and devices, a gang member's own share, nothing for anyone else.
TEST(JobRecord, LoadOnCountsTheHolderAndEachGangMemberOwnShare) {
  JobRecord job;
  job.fields = {{"id", "j1"}, {"state", "active"}, {"worker_id", "w1"}, {"gpus", "2"}, {"charged_gpus", "2"},
                {"ext_ml_assigned_devices", "[0,1]"}, {"doc", R"({"type":"train","ext_ml_model_id":"llama"})"}};
  const auto load = job.load_on("w1");
  ASSERT_TRUE(load);
  EXPECT_EQ(load->gpus, 2);
  EXPECT_EQ(load->devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(load->labels.at("model_id"), "llama");
  EXPECT_EQ(load->labels.at("job_id"), "j1");
  EXPECT_FALSE(job.load_on("w2")) << "another worker holds it";
  job.fields["state"] = "completed";
  EXPECT_FALSE(job.load_on("w1")) << "it ended";

  JobRecord gang;
  gang.fields = {{"id", "g1"}, {"state", "available"}, {"gang_workers", R"(["w1","w2"])"},
                 {"gang_members", R"([{"worker_id":"w1","gpus":4,"devices":"[0,1,2,3]"},{"worker_id":"w2","gpus":4,"devices":""}])"}};
  const auto member = gang.load_on("w2");
  ASSERT_TRUE(member) << "a forming gang's member holds its share";
  EXPECT_EQ(member->gpus, 4);
  EXPECT_TRUE(member->devices.empty());
  EXPECT_EQ(gang.load_on("w1")->devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(gang.load_on("w3"));
}
