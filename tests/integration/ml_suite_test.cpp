// Our ML-semantics conformance suite (conformance/suites/ml-semantics, one case
// per rule) run through ojs-conformance against a real broker.
#include <gtest/gtest.h>


#include "support/processes.hpp"

using namespace ojs::test;

namespace {
std::string suites_dir() { return std::string(OJS_SOURCE_DIR) + "/conformance/suites"; }
}  // namespace

TEST(MlSemanticsSuite, AllCasesPass) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  auto run = run_process({binary_path("conformance/ojs-conformance"), "--url", broker.url(), suites_dir() + "/ml-semantics"});
  std::cout << run.output << std::endl;
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.output.find(" 0 failed"), std::string::npos);
  EXPECT_EQ(run.output.find("FAIL"), std::string::npos);
}
