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

}  // namespace
}  // namespace ojs::worker
