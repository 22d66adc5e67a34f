// The public OJS conformance cases (level 0 and the ML extension), read from
// ../shared/ojs-reference, run through our own runner against a real broker.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/processes.hpp"

using namespace ojs::test;

namespace {
std::string reference_dir() { return std::string(OJS_SOURCE_DIR) + "/../shared/ojs-reference/conformance"; }
}  // namespace

TEST(Conformance, PublicLevel0AndMlCasesPass) {
  if (!std::filesystem::exists(reference_dir()))
    GTEST_SKIP() << "public conformance cases not found at " << reference_dir();
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  auto run = run_process({binary_path("conformance/ojs-conformance"), "--url", broker.url(),
                          reference_dir() + "/level-0-core", reference_dir() + "/ext-ml-resources"});
  std::cout << run.output << std::endl;
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.output.find(" 0 failed"), std::string::npos);
}
