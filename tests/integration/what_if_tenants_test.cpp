// A tenant's what-if tells nothing of another tenant's jobs: an end_job change naming
// another tenant's running job is answered exactly as one naming no job at all.
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"
#include "support/role_tokens.hpp"

using nlohmann::json;
using namespace ojs::test;

class WhatIfTenants : public ::testing::Test, protected RoleTokenBroker {
 protected:
  WhatIfTenants() : RoleTokenBroker("what_if_tenants") {}
};

TEST_F(WhatIfTenants, AnotherTenantsRunningJobIsAnUnknownJob) {
  const auto theirs = team_a.push(ml_job("wit", {{"ext_ml_gpu_count", 2}}));
  const json caps = {{"capabilities", example_worker("4xa100-pcie")}};
  ASSERT_EQ(pool.fetch({"wit"}, "pool-1", 1, caps).size(), 1u);
  ASSERT_EQ(admin.get("/ojs/v1/jobs/" + theirs).body["job"]["state"], "active");
  const auto mine = team_b.push(ml_job("wit", {{"ext_ml_gpu_count", 4}}));

  const auto ask = [&](const std::string& job_id) {
    return team_b.post("/ojs/v1/jobs/" + mine + "/what-if", {{"changes", {{{"kind", "end_job"}, {"job_id", job_id}}}}});
  };
  const auto other_tenant = ask(theirs);
  const auto unknown = ask("01890a5d-ac96-774b-bcce-b302099a8057");
  EXPECT_EQ(unknown.status, 400) << unknown.body.dump();
  EXPECT_EQ(other_tenant.status, unknown.status) << other_tenant.body.dump();
  EXPECT_EQ(other_tenant.body["error"]["details"], unknown.body["error"]["details"]) << other_tenant.body.dump();
  EXPECT_EQ(other_tenant.body["error"]["message"], unknown.body["error"]["message"]);
  // The owner's own what-if may end it.
  const auto own = admin.post("/ojs/v1/jobs/" + mine + "/what-if", {{"changes", {{{"kind", "end_job"}, {"job_id", theirs}}}}});
  EXPECT_EQ(own.status, 200) << own.body.dump();
}
