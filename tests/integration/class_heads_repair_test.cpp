// The class-head check counts only entries it corrected: an empty class, with no
// entry and nothing to list, is right as it is (the maintenance warns on a count).
#include <gtest/gtest.h>

#include "support/processes.hpp"

using namespace ojs::test;

TEST(ClassHeadsRepair, AnEmptyClassIsNoCorrection) {
  RedisServer redis;
  redis_lines(redis, {"HSET", "ojs:{chr}:classes", "empty-class", "{}"});
  const auto run = [&] {
    return redis_lines(redis, {"EVAL", lua_source("_lib.lua") + "\n" + lua_source("class_heads_repair.lua"), "3", "ojs:{chr}:classes",
                               "ojs:{chr}:ready:", "ojs:{chr}:heads"});
  };
  const auto first = run();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0], "0");
  // A class with a job and no entry is a correction, once.
  redis_lines(redis, {"ZADD", "ojs:{chr}:ready:full-class", "5", "job-1"});
  redis_lines(redis, {"HSET", "ojs:{chr}:classes", "full-class", "{}"});
  EXPECT_EQ(run().at(0), "1");
  EXPECT_EQ(run().at(0), "0");
}
