#include "worker/config/worker_config.hpp"

#include <gtest/gtest.h>

namespace ojs::worker {
namespace {

TEST(CommandTable, ExactThenLongestPrefixThenCatchAll) {
  const auto config = parse_worker_config(nlohmann::json::parse(R"({"commands": {
    "ml.train": ["python3", "train.py"],
    "ml.*": "python3 generic.py",
    "ml.infer.*": "python3 infer.py",
    "*": "echo fallback"}})"));
  const auto& table = config.commands;
  ASSERT_NE(resolve_command(table, "ml.train"), nullptr);
  EXPECT_EQ(resolve_command(table, "ml.train")->argv, (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ(resolve_command(table, "ml.eval")->argv.back(), "python3 generic.py");
  EXPECT_EQ(resolve_command(table, "ml.infer.llm")->argv.back(), "python3 infer.py");
  EXPECT_EQ(resolve_command(table, "email.send")->argv.back(), "echo fallback");
  EXPECT_EQ(resolve_command(table, "ml.eval")->argv.front(), "/bin/sh");
}

TEST(CommandTable, NoMatchIsNull) {
  CommandTable table;
  table["ml.*"] = shell_command("true");
  EXPECT_EQ(resolve_command(table, "email.send"), nullptr);
  EXPECT_EQ(resolve_command(table, "ml"), nullptr);  // "ml.*" needs the dot
}

TEST(CommandTable, ParsesCommandLineAssignments) {
  const auto [type, command] = parse_command_assignment("ml.*=python3 run.py --x=1");
  EXPECT_EQ(type, "ml.*");
  EXPECT_EQ(command.argv, (std::vector<std::string>{"/bin/sh", "-c", "python3 run.py --x=1"}));
  EXPECT_THROW(parse_command_assignment("no-equals"), std::invalid_argument);
  EXPECT_THROW(parse_command_assignment("=cmd"), std::invalid_argument);
}

TEST(WorkerConfig, RejectsWrongShapes) {
  EXPECT_THROW(parse_worker_config(nlohmann::json::array()), std::invalid_argument);
  EXPECT_THROW(parse_worker_config(nlohmann::json::parse(R"({"commands": {"x": []}})")), std::invalid_argument);
  EXPECT_THROW(parse_worker_config(nlohmann::json::parse(R"({"labels": ["a"]})")), std::invalid_argument);
}

// Isolation settings are read whole, and a wrong one is named (the agent refuses to start).
TEST(WorkerConfig, ReadsIsolationAndNamesAWrongField) {
  const auto config = parse_worker_config(nlohmann::json::parse(
      R"({"isolation": {"mode": "on", "cgroup_version": "v2", "dev_dir": "/tmp/dev", "pids_max": 64, "numa_cpus": {"0": "0-15", "1": "16-31"}}})"));
  EXPECT_EQ(config.isolation.mode, "on");
  EXPECT_EQ(config.isolation.cgroup_version, "v2");
  EXPECT_EQ(config.isolation.dev_dir, "/tmp/dev");
  EXPECT_EQ(config.isolation.pids_max, 64);
  EXPECT_EQ(config.isolation.numa_cpus.at(1), "16-31");
  EXPECT_EQ(parse_worker_config(nlohmann::json::object()).isolation.mode, "auto");
  EXPECT_EQ(parse_worker_config(nlohmann::json::object()).isolation.cgroup_version, "auto");
  const auto message = [](const char* text) {
    try {
      parse_worker_config(nlohmann::json::parse(text));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(R"({"isolation": {"mode": "maybe"}})"), "isolation.mode must be auto, on or off");
  EXPECT_EQ(message(R"({"isolation": {"cgroup_version": "2"}})"), "isolation.cgroup_version must be auto, v1 or v2");
  EXPECT_EQ(message(R"({"isolation": {"pids_max": 0}})"), "isolation.pids_max must be at least 1");
  EXPECT_NE(message(R"({"isolation": {"numa_cpus": {"zero": "0"}}})").find("isolation.numa_cpus.zero"), std::string::npos);
}

}  // namespace
}  // namespace ojs::worker
