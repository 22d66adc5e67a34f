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
