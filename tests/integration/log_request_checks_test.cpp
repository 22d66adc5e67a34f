// What a log request gets wrong is named: a bad Last-Event-ID is reported as
// Last-Event-ID (not as since), a non-string worker_id from a bound worker token is
// the request's 400 (not a 403), and ojsctl shows a job's control characters escaped
// unless --raw.
#include <gtest/gtest.h>

#include "support/processes.hpp"
#include "support/role_tokens.hpp"
#include "support/sse_client.hpp"

using nlohmann::json;
using namespace ojs::test;

class LogRequestChecks : public ::testing::Test, protected RoleTokenBroker {
 protected:
  LogRequestChecks() : RoleTokenBroker("log_request_checks") {}
  std::string running_job() {
    const auto id = team_a.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "lrc"}}}});
    EXPECT_EQ(pool.fetch({"lrc"}, "pool-1").size(), 1u);
    return id;
  }
};

TEST_F(LogRequestChecks, FieldsAreNamedAsSent) {
  const auto id = running_job();
  SseClient follow(broker.port(), "/ojs/v1/jobs/" + id + "/logs?follow=true",
                   {"Authorization: Bearer team-a-token", "Last-Event-ID: not-a-cursor"});
  ASSERT_EQ(follow.status(), 400);
  const auto refused = json::parse(follow.error_body(), nullptr, false);
  EXPECT_EQ(refused["error"]["details"]["field"], "Last-Event-ID") << follow.error_body();

  const auto r = pool.post("/ojs/v1/workers/logs", {{"worker_id", 42}, {"job_id", id}, {"chunks", json::array()}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "worker_id") << r.body.dump();
}

TEST_F(LogRequestChecks, OjsctlEscapesControlCharactersUnlessRaw) {
  const auto id = running_job();
  ASSERT_EQ(pool.post("/ojs/v1/workers/logs", {{"worker_id", "pool-1"}, {"job_id", id},
                                               {"chunks", {{{"stream", "stdout"}, {"data", "\x1b]0;owned\x07red\n"}}}}})
                .status,
            200);
  const std::vector<std::string> base{binary_path("ojsctl/ojsctl"), "--url", broker.url(), "--token", "team-a-token", "logs", id};
  const auto shown = run_process(base, 60);
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_EQ(shown.output.find('\x1b'), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find("\\x1b]0;owned\\x07red\n"), std::string::npos) << shown.output;
  auto raw_args = base;
  raw_args.push_back("--raw");
  const auto raw = run_process(raw_args, 60);
  ASSERT_EQ(raw.exit_code, 0) << raw.output;
  EXPECT_NE(raw.output.find("\x1b]0;owned\x07red\n"), std::string::npos);
}
