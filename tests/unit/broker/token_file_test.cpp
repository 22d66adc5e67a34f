// Token file entries that bind a worker token to worker ids.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "broker/auth/token_file.hpp"

using nlohmann::json;
using namespace ojs::broker::auth;

namespace {
const std::string kHash(64, 'a');
}

TEST(TokenFile, WorkerBindingByIdsOrPrefix) {
  const auto principals = parse_token_file(json::array({
      {{"name", "n7"}, {"roles", {"worker"}}, {"sha256", kHash}, {"worker_ids", {"node-7", "node-7b"}}},
      {{"name", "pool"}, {"roles", {"worker"}}, {"sha256", kHash}, {"worker_id_prefix", "pool-"}},
      {{"name", "free"}, {"roles", {"worker"}}, {"sha256", kHash}},
  }));
  ASSERT_EQ(principals.size(), 3u);
  const auto& n7 = principals[0].identity;
  EXPECT_TRUE(n7.binds_workers());
  EXPECT_TRUE(n7.may_act_as("node-7"));
  EXPECT_FALSE(n7.may_act_as("node-8"));
  EXPECT_FALSE(n7.may_act_as(""));
  const auto& pool = principals[1].identity;
  EXPECT_TRUE(pool.may_act_as("pool-3"));
  EXPECT_FALSE(pool.may_act_as("poo"));
  EXPECT_FALSE(pool.may_act_as("node-7"));
  EXPECT_FALSE(principals[2].identity.binds_workers());
  EXPECT_TRUE(principals[2].identity.may_act_as("anything"));
}

TEST(TokenFile, BadWorkerBindingsAreRefusedAtStartUp) {
  for (const json& binding : {json{{"worker_ids", json::array()}}, json{{"worker_ids", {"a:b"}}}, json{{"worker_ids", "node-7"}},
                              json{{"worker_id_prefix", ""}}, json{{"worker_id_prefix", 7}}}) {
    json entry = {{"name", "x"}, {"roles", {"worker"}}, {"sha256", kHash}};
    entry.update(binding);
    EXPECT_THROW(parse_token_file(json::array({entry})), std::runtime_error) << binding.dump();
  }
}
