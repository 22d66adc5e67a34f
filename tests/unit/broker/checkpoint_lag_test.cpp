// When a running job is late to checkpoint (broker/jobs/checkpoint_lag.hpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "broker/jobs/checkpoint_lag.hpp"

using ojs::broker::checkpoint_lag;
using ojs::broker::JobRecord;

namespace {

JobRecord running(const nlohmann::json& doc, std::int64_t started_ms) {
  JobRecord job;
  job.fields = {{"id", "j"}, {"state", "active"}, {"started_at", std::to_string(started_ms)}, {"doc", doc.dump()}};
  return job;
}

const nlohmann::json kCheckpointing = {{"type", "t"}, {"args", nlohmann::json::array()}, {"ext_ml_checkpoint_enabled", true},
                                       {"ext_ml_checkpoint_interval_s", 60}};

}  // namespace

TEST(CheckpointLag, OverdueOnlyPastTwiceTheIntervalSinceTheStart) {
  const std::int64_t start = 1'000'000;
  auto lag = checkpoint_lag(running(kCheckpointing, start), start + 120'000);
  ASSERT_TRUE(lag);
  EXPECT_EQ(lag->interval_s, 60);
  EXPECT_FALSE(lag->overdue);  // one interval missed is a slow save, not a stopped one
  lag = checkpoint_lag(running(kCheckpointing, start), start + 125'000);
  ASSERT_TRUE(lag);
  EXPECT_TRUE(lag->overdue);
  EXPECT_EQ(lag->overdue_by_ms, 5'000);
}

TEST(CheckpointLag, CountsFromTheLastCheckpoint) {
  const std::int64_t start = 1'000'000;
  auto job = running(kCheckpointing, start);
  job.fields["last_checkpoint_at"] = std::to_string(start + 100'000);
  const auto lag = checkpoint_lag(job, start + 200'000);
  ASSERT_TRUE(lag);
  EXPECT_EQ(lag->since_ms, start + 100'000);
  EXPECT_FALSE(lag->overdue);
  // A checkpoint of an earlier attempt does not count for this one: its start does.
  job.fields["last_checkpoint_at"] = std::to_string(start - 500'000);
  EXPECT_TRUE(checkpoint_lag(job, start + 200'000)->overdue);
}

TEST(CheckpointLag, OnlyRunningJobsThatCheckpoint) {
  auto plain = kCheckpointing;
  plain["ext_ml_checkpoint_enabled"] = false;
  EXPECT_FALSE(checkpoint_lag(running(plain, 0), 10'000'000));
  auto waiting = running(kCheckpointing, 0);
  waiting.fields["state"] = "available";
  EXPECT_FALSE(checkpoint_lag(waiting, 10'000'000));
}
