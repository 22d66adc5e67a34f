#include "worker/config/worker_config.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ojs::worker {
namespace {

std::string error_of(const char* document) {
  try {
    parse_worker_config(nlohmann::json::parse(document));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(WorkerConfig, CheckpointRetentionCommandIsAnArgvWithATimeout) {
  const auto config = parse_worker_config(nlohmann::json::parse(
      R"({"checkpoint_retention_command": ["aws", "s3", "rm", "--recursive"], "checkpoint_retention_timeout_s": 30})"));
  EXPECT_EQ(config.checkpoint_retention_command, (std::vector<std::string>{"aws", "s3", "rm", "--recursive"}));
  EXPECT_EQ(config.checkpoint_retention_timeout_s, 30);
  const auto defaults = parse_worker_config(nlohmann::json::object());
  EXPECT_TRUE(defaults.checkpoint_retention_command.empty());
  EXPECT_EQ(defaults.checkpoint_retention_timeout_s, 60);
}

TEST(WorkerConfig, ABadCheckpointRetentionSettingNamesTheField) {
  for (const char* bad : {R"({"checkpoint_retention_command": "aws s3 rm"})", R"({"checkpoint_retention_command": []})",
                          R"({"checkpoint_retention_command": ["aws", 3]})", R"({"checkpoint_retention_command": [""]})"})
    EXPECT_NE(error_of(bad).find("checkpoint_retention_command must be an array of strings"), std::string::npos) << bad;
  for (const char* bad : {R"({"checkpoint_retention_timeout_s": 0})", R"({"checkpoint_retention_timeout_s": -1})"})
    EXPECT_NE(error_of(bad).find("checkpoint_retention_timeout_s must be more than 0"), std::string::npos) << bad;
}

}  // namespace
}  // namespace ojs::worker
