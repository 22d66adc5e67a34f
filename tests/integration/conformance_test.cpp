// The public OJS conformance cases, read from ../shared/ojs-reference, run through
// our own runner against a real broker. One test per level (each its own ctest
// entry, see tests/CMakeLists.txt), so a level that fails is visible by name.
// Where the cases are absent (a plain clone) each says so and ctest reports it skipped.
// ctest-per-test: conformance_
// ctest-timeout: 900
// ctest-skip-without: conformance-cases
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "support/processes.hpp"
#include "support/reference_dir.hpp"

using namespace ojs::test;

namespace {
std::string reference_dir() { return conformance_reference_dir(); }

// Runs the given case folders; a missing folder is a failure, and only the
// absence of the whole reference (conformance_cases_absent) a skip.
void run_cases(const std::vector<std::string>& folders, std::vector<std::string> broker_args = {}) {
  if (const auto why = conformance_cases_absent(); !why.empty()) GTEST_SKIP() << why;
  for (const auto& f : folders)
    ASSERT_TRUE(std::filesystem::is_directory(reference_dir() + "/" + f)) << "public conformance cases not found: " << reference_dir() + "/" + f;
  RedisServer redis;
  BrokerProcess broker{redis.url(), std::move(broker_args)};
  std::vector<std::string> argv{binary_path("conformance/ojs-conformance"), "--url", broker.url()};
  for (const auto& f : folders) argv.push_back(reference_dir() + "/" + f);
  auto run = run_process(argv);
  std::cout << run.output << std::endl;
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.output.find(" 0 failed"), std::string::npos);
  EXPECT_EQ(run.output.find("skipped"), std::string::npos);
}
}  // namespace

TEST(Conformance, Level0Core) { run_cases({"level-0-core"}); }

TEST(Conformance, ExtMlResources) { run_cases({"ext-ml-resources"}); }

// Delays, TTL and cron; the cron cases wait for real minute ticks (about 4 minutes).
// The overlap case holds a fetched job for 130 s without heartbeats: the broker runs
// with the worker protocol's default visibility timeout (1800 s, ours is 30 s) and
// reclaims silent workers' jobs only after 10 minutes.
TEST(Conformance, Level2Scheduled) {
  run_cases({"level-2-scheduled"}, {"--visibility-timeout-ms", "1800000", "--worker-dead-after-ms", "600000"});
}

TEST(Conformance, Level3Workflows) { run_cases({"level-3-workflows"}); }
