// ojsctl against a real broker: each command's output and exit status, as a
// script would use them (-o name / json, the documented exit codes), and where its flags go.
#include <gtest/gtest.h>

#include <fstream>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"
#include "support/role_tokens.hpp"
#include "support/sse_client.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// The exit codes of ojsctl/main.cpp (docs/operations.md "Operating day to day").
constexpr int kInvalid = 2, kNotFound = 4, kConflict = 5, kDenied = 6, kEndedBadly = 7;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

class Ojsctl : public ::testing::Test, protected RoleTokenBroker {
 protected:
  Ojsctl() : RoleTokenBroker("ojsctl_cli") {}
  RunResult ctl(const std::string& token, std::vector<std::string> args) {
    std::vector<std::string> argv{binary_path("ojsctl/ojsctl"), "--url", broker.url(), "--token", token};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, 60);
  }
  RunResult admin_ctl(std::vector<std::string> args) { return ctl("admin-token", std::move(args)); }
};

TEST_F(Ojsctl, PushFromFlagsOrAFileAndChangeTheJob) {
  auto pushed = ctl("team-a-token", {"-o", "name", "push", "--type", "ml.task", "--queue", "cq", "--gpus", "1", "--gpu-type",
                                     "nvidia-h100", "--priority", "5", "--set", "ext_ml_priority_class=reserved"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  const auto id = trimmed(pushed.output);
  auto job = admin.get("/ojs/v1/jobs/" + id).body["job"];
  ASSERT_EQ(job["id"], id) << pushed.output;
  EXPECT_EQ(job["ext_ml_gpu_count"], 1);
  EXPECT_EQ(job["ext_ml_gpu_type"], "nvidia-h100");
  EXPECT_EQ(job["ext_ml_priority_class"], "reserved");
  EXPECT_EQ(job["priority"], 5);

  const std::string file = make_temp_dir("ojsctl-push") + "/job.json";
  std::ofstream(file) << json{{"type", "ml.task"}, {"args", {1, 2}}, {"options", {{"queue", "cq"}}}}.dump();
  auto from_file = admin_ctl({"-o", "json", "push", "-f", file});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.output;
  EXPECT_EQ(json::parse(from_file.output)["args"], json({1, 2}));

  // Bad input is refused with the field named and exit status 2.
  auto bad = admin_ctl({"push", "--type", "ml.task", "--priority", "500"});
  EXPECT_EQ(bad.exit_code, kInvalid) << bad.output;
  EXPECT_NE(bad.output.find("priority"), std::string::npos) << bad.output;

  auto held = ctl("team-a-token", {"hold", id});
  ASSERT_EQ(held.exit_code, 0) << held.output;
  EXPECT_NE(held.output.find("pending"), std::string::npos) << held.output;
  EXPECT_NE(held.output.find("team-a"), std::string::npos) << held.output;
  auto updated = ctl("team-a-token", {"-o", "json", "update", id, "--priority", "9", "--set", "ext_ml_gpu_type=nvidia-a100"});
  ASSERT_EQ(updated.exit_code, 0) << updated.output;
  EXPECT_EQ(json::parse(updated.output)["priority"], 9);
  EXPECT_EQ(json::parse(updated.output)["ext_ml_gpu_type"], "nvidia-a100");
  auto released = ctl("team-a-token", {"release", id});
  ASSERT_EQ(released.exit_code, 0) << released.output;
  EXPECT_NE(released.output.find("available"), std::string::npos) << released.output;
  EXPECT_EQ(ctl("team-a-token", {"release", id}).exit_code, kConflict);

  // Another tenant sees no such job; a worker token may not act on jobs.
  EXPECT_EQ(ctl("team-b-token", {"cancel", id}).exit_code, kNotFound);
  EXPECT_EQ(ctl("node-a-token", {"hold", id}).exit_code, kDenied);
  EXPECT_EQ(admin_ctl({"cancel", "01890a5d-ac96-774b-bcce-b302099a8057"}).exit_code, kNotFound);

  auto cancelled = admin_ctl({"cancel", id});
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.output;
  EXPECT_NE(cancelled.output.find("cancelled"), std::string::npos);
  EXPECT_EQ(admin_ctl({"cancel", id}).exit_code, kConflict);
  EXPECT_EQ(admin_ctl({"update", id, "--priority", "1"}).exit_code, kConflict);

  auto listed = admin_ctl({"-o", "name", "jobs", "list", "cq", "--state", "cancelled"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_EQ(trimmed(listed.output), id);
  auto table = admin_ctl({"jobs", "list", "--state", "cancelled"});
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("QUEUE"), std::string::npos);
  EXPECT_NE(table.output.find(id), std::string::npos);
  EXPECT_EQ(admin_ctl({"jobs", "list", "--state", "bogus"}).exit_code, kInvalid);

  auto retried = admin_ctl({"-o", "json", "retry", id});
  ASSERT_EQ(retried.exit_code, 0) << retried.output;
  EXPECT_EQ(json::parse(retried.output)["state"], "available");
}

TEST_F(Ojsctl, DeadLetterListRetryAndDelete) {
  json j = job_in("dlq", {{"max_attempts", 1}, {"on_exhaustion", "dead_letter"}});
  const auto first = admin.push(j);
  const auto second = admin.push(j);
  for (int i = 0; i < 2; ++i) {
    auto got = admin.fetch({"dlq"}, "w1");
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(admin.post("/ojs/v1/workers/nack", {{"job_id", got[0]["id"]}, {"worker_id", "w1"},
                                                  {"error", {{"message", "boom"}, {"retryable", true}}}}).status, 200);
  }
  auto listed = admin_ctl({"-o", "name", "dead-letter", "list", "--queue", "dlq"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find(first), std::string::npos);
  EXPECT_NE(listed.output.find(second), std::string::npos);

  auto retried = admin_ctl({"-o", "json", "dead-letter", "retry", first});
  ASSERT_EQ(retried.exit_code, 0) << retried.output;
  EXPECT_EQ(json::parse(retried.output)["state"], "available");
  EXPECT_EQ(admin_ctl({"dead-letter", "delete", second}).exit_code, 0);
  EXPECT_EQ(admin_ctl({"dead-letter", "delete", second}).exit_code, kNotFound);
  auto empty = admin_ctl({"-o", "name", "dead-letter", "list", "--queue", "dlq"});
  EXPECT_EQ(trimmed(empty.output), "");
}

TEST_F(Ojsctl, WatchAndLogsFollowEndWithTheJob) {
  const auto id = admin.push(job_in("wq"));
  auto got = admin.fetch({"wq"}, "w1");
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(admin.post("/ojs/v1/workers/logs", {{"worker_id", "w1"}, {"job_id", id},
                                                 {"chunks", {{{"stream", "stdout"}, {"data", "hello\nworld\n"}}}}}).status, 200);
  ASSERT_EQ(admin.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "w1"}, {"error", {{"message", "no"}, {"retryable", false}}}}).status,
            200);
  // The job is discarded: watch and logs -f print and end with status 7.
  auto watch = admin_ctl({"watch", id});
  EXPECT_EQ(watch.exit_code, kEndedBadly) << watch.output;
  EXPECT_NE(watch.output.find("discarded"), std::string::npos) << watch.output;
  auto follow = admin_ctl({"logs", "-f", id});
  EXPECT_EQ(follow.exit_code, kEndedBadly) << follow.output;
  EXPECT_EQ(follow.output, "hello\nworld\n");
  auto tail = admin_ctl({"logs", "--tail", "1", id});
  ASSERT_EQ(tail.exit_code, 0) << tail.output;
  EXPECT_EQ(tail.output, "world\n");

  // A job that completes while watched: status 0.
  const auto ok = admin.push(job_in("wq"));
  ASSERT_EQ(admin.fetch({"wq"}, "w1").size(), 1u);
  ASSERT_EQ(admin.post("/ojs/v1/workers/ack", {{"job_id", ok}, {"worker_id", "w1"}}).status, 200);
  auto done = admin_ctl({"-o", "name", "watch", ok});
  EXPECT_EQ(done.exit_code, 0) << done.output;
  EXPECT_EQ(trimmed(done.output), "completed");
}

TEST_F(Ojsctl, CompletionPrintsABashScript) {
  auto c = admin_ctl({"completion", "bash"});
  ASSERT_EQ(c.exit_code, 0);
  EXPECT_NE(c.output.find("complete -F _ojsctl ojsctl"), std::string::npos);
  EXPECT_NE(c.output.find("dead-letter"), std::string::npos);
}

// Global flags after the subcommand, as kubectl and scontrol users write them: the
// same answer as before it.
TEST_F(Ojsctl, GlobalFlagsGoBeforeOrAfterTheCommand) {
  const std::string ojsctl = binary_path("ojsctl/ojsctl");
  auto pushed = run_process({ojsctl, "push", "--type", "ml.task", "--queue", "gq", "-o", "json", "--url", broker.url(), "--token",
                             "admin-token"},
                            60);
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  const auto job = json::parse(pushed.output, nullptr, false);
  ASSERT_TRUE(job.is_object()) << pushed.output;
  const std::string id = job.value("id", "");
  EXPECT_EQ(job["type"], "ml.task");

  auto listed = run_process({ojsctl, "--url", broker.url(), "jobs", "list", "gq", "--token", "admin-token", "--output", "name"}, 60);
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_EQ(trimmed(listed.output), id);

  auto got = admin.fetch({"gq"}, "w1");
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(admin.post("/ojs/v1/workers/logs", {{"worker_id", "w1"}, {"job_id", id},
                                                 {"chunks", {{{"stream", "stdout"}, {"data", "step 1\n"}}}}}).status, 200);
  auto logs = admin_ctl({"logs", id, "-o", "json"});
  ASSERT_EQ(logs.exit_code, 0) << logs.output;
  const auto page = json::parse(logs.output, nullptr, false);
  ASSERT_TRUE(page.is_object()) << logs.output;
  ASSERT_EQ(page["entries"].size(), 1u) << logs.output;
  EXPECT_EQ(page["entries"][0]["data"], "step 1\n");
  auto json_flag = admin_ctl({"logs", id, "--json"});
  ASSERT_EQ(json_flag.exit_code, 0) << json_flag.output;
  EXPECT_EQ(json::parse(json_flag.output, nullptr, false), page);

  // A value the global flag refuses is refused after the command too.
  auto bad = admin_ctl({"logs", id, "-o", "yaml"});
  EXPECT_EQ(bad.exit_code, kInvalid) << bad.output;
  EXPECT_NE(bad.output.find("yaml"), std::string::npos) << bad.output;
}

TEST_F(Ojsctl, HelpListsExamples) {
  auto help = run_process({binary_path("ojsctl/ojsctl"), "--help"}, 60);
  ASSERT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("Examples:"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("ojsctl push --type ml.train --gpus 4"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("ojsctl why JOB_ID"), std::string::npos) << help.output;
  // The subcommands' own help stays about the subcommand.
  auto push_help = run_process({binary_path("ojsctl/ojsctl"), "push", "--help"}, 60);
  ASSERT_EQ(push_help.exit_code, 0) << push_help.output;
  EXPECT_NE(push_help.output.find("--gpu-type"), std::string::npos) << push_help.output;
  EXPECT_EQ(push_help.output.find("Examples:"), std::string::npos) << push_help.output;
}
