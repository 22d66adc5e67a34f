// Every public OJS conformance suite, read from ../shared/ojs-reference, run through
// our own runner against a real broker: one test per suite folder (each its own
// ctest entry, see tests/CMakeLists.txt), so a suite that regresses is visible by
// name. A case we do not pass is listed with its reason in
// conformance/known-failures.json; a failure not listed there fails the entry, and
// so does a listed case that passes (take it off the list). Where the cases are
// absent (a plain clone) each entry says so and ctest reports it skipped.
// ctest-per-test: conformance_
// ctest-timeout: 900
// ctest-skip-without: conformance-cases
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "support/processes.hpp"
#include "support/reference_dir.hpp"

using namespace ojs::test;
using nlohmann::json;

namespace {
std::string reference_dir() { return conformance_reference_dir(); }

// Every suite folder of the reference, each run by one test below.
const std::set<std::string> kSuites = {
    "level-0-core",          "level-1-reliable",      "level-2-scheduled",     "level-3-workflows",
    "level-4-advanced",      "ext-admin-api",         "ext-backpressure",      "ext-dead-letter",
    "ext-durable-execution", "ext-encryption",        "ext-fair-scheduling",   "ext-federation",
    "ext-graceful-shutdown", "ext-job-versioning",    "ext-middleware",        "ext-ml-resources",
    "ext-multi-tenancy",     "ext-observability",     "ext-progress",          "ext-rate-limiting",
    "ext-schema-registry",   "ext-webhooks"};

json known_failures() {
  std::ifstream in(std::string(OJS_SOURCE_DIR) + "/conformance/known-failures.json");
  return json::parse(in);
}

// Runs one suite folder and compares its failed cases with the listed ones: an
// unlisted failure and a listed case that passed (or is no longer there) fail.
// A missing folder is a failure; only the absence of the whole reference
// (conformance_cases_absent) is a skip.
void run_suite(const std::string& suite, std::vector<std::string> broker_args = {}) {
  if (const auto why = conformance_cases_absent(); !why.empty()) GTEST_SKIP() << why;
  const auto folder = reference_dir() + "/" + suite;
  ASSERT_TRUE(std::filesystem::is_directory(folder)) << "public conformance cases not found: " << folder;
  const json listed = known_failures().value(suite, json::object());
  RedisServer redis;
  BrokerProcess broker{redis.url(), std::move(broker_args)};
  const auto report_path = make_temp_dir("conformance-" + suite) + "/report.json";
  auto run = run_process({binary_path("conformance/ojs-conformance"), "--url", broker.url(), "--json", report_path, folder});
  std::cout << run.output << std::endl;
  EXPECT_EQ(run.output.find("skipped"), std::string::npos) << "a case file was not read";
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good()) << "no JSON report from the runner (exit " << run.exit_code << ")";
  const auto report = json::parse(in);
  std::set<std::string> ran;  // test ids (level 0 has cases that share one)
  std::size_t passed = 0, cases = 0;
  for (const auto& c : report.at("cases")) {
    const auto id = c.at("test_id").get<std::string>();
    ran.insert(id);
    ++cases;
    const bool ok = c.at("result") == "pass";
    passed += ok;
    if (!ok)
      EXPECT_TRUE(listed.contains(id)) << suite << ": " << id << " failed and is not in conformance/known-failures.json: "
                                       << c.value("failure", "");
    else
      EXPECT_FALSE(listed.contains(id)) << suite << ": " << id << " passes now: take it off conformance/known-failures.json";
  }
  for (const auto& [id, reason] : listed.items())
    EXPECT_TRUE(ran.contains(id)) << suite << ": listed case " << id << " is not in the suite any more";
  EXPECT_GT(cases, 0u);
  std::cout << suite << ": " << passed << "/" << cases << " passed, " << listed.size() << " listed" << std::endl;
}
}  // namespace

// A suite folder without a test here, or a list entry naming no suite, is loud.
TEST(Conformance, EverySuiteFolderHasAnEntry) {
  const json listed = known_failures();
  for (const auto& [suite, cases] : listed.items()) {
    EXPECT_TRUE(kSuites.contains(suite)) << "conformance/known-failures.json names an unknown suite " << suite;
    for (const auto& [id, reason] : cases.items())
      EXPECT_TRUE(reason.is_string() && !reason.get<std::string>().empty()) << suite << " " << id << ": give the reason";
  }
  if (const auto why = conformance_cases_absent(); !why.empty()) GTEST_SKIP() << why;
  for (const auto& entry : std::filesystem::directory_iterator(reference_dir()))
    if (entry.is_directory())
      EXPECT_TRUE(kSuites.contains(entry.path().filename().string())) << "no test runs the suite " << entry.path();
}

TEST(Conformance, Level0Core) { run_suite("level-0-core"); }

// L1-WRK-002/003 steer the heartbeat's state by a job's meta.test_directive: served
// only behind the test hook --test-directives (docs/operations.md).
TEST(Conformance, Level1Reliable) { run_suite("level-1-reliable", {"--test-directives"}); }

// Delays, TTL and cron; the cron cases wait for real minute ticks (about 4 minutes).
// The overlap case holds a fetched job for 130 s without heartbeats: the broker runs
// with the worker protocol's default visibility timeout (1800 s, ours is 30 s) and
// reclaims silent workers' jobs only after 10 minutes.
TEST(Conformance, Level2Scheduled) {
  run_suite("level-2-scheduled", {"--visibility-timeout-ms", "1800000", "--worker-dead-after-ms", "600000"});
}

TEST(Conformance, Level3Workflows) { run_suite("level-3-workflows"); }

TEST(Conformance, Level4Advanced) { run_suite("level-4-advanced"); }

TEST(Conformance, ExtAdminApi) { run_suite("ext-admin-api"); }

TEST(Conformance, ExtBackpressure) { run_suite("ext-backpressure"); }

TEST(Conformance, ExtDeadLetter) { run_suite("ext-dead-letter"); }

TEST(Conformance, ExtDurableExecution) { run_suite("ext-durable-execution"); }

TEST(Conformance, ExtEncryption) { run_suite("ext-encryption"); }

TEST(Conformance, ExtFairScheduling) { run_suite("ext-fair-scheduling"); }

TEST(Conformance, ExtFederation) { run_suite("ext-federation"); }

TEST(Conformance, ExtGracefulShutdown) { run_suite("ext-graceful-shutdown"); }

TEST(Conformance, ExtJobVersioning) { run_suite("ext-job-versioning"); }

TEST(Conformance, ExtMiddleware) { run_suite("ext-middleware"); }

TEST(Conformance, ExtMlResources) { run_suite("ext-ml-resources"); }

TEST(Conformance, ExtMultiTenancy) { run_suite("ext-multi-tenancy"); }

TEST(Conformance, ExtObservability) { run_suite("ext-observability"); }

TEST(Conformance, ExtProgress) { run_suite("ext-progress"); }

TEST(Conformance, ExtRateLimiting) { run_suite("ext-rate-limiting"); }

TEST(Conformance, ExtSchemaRegistry) { run_suite("ext-schema-registry"); }

TEST(Conformance, ExtWebhooks) { run_suite("ext-webhooks"); }
