// The token file (and broker) the identity and hardening tests share: bound worker tokens
// (node-a by id, pool-* by prefix), two tenant-pinned producers and an admin,
// each stored as the SHA-256 of "<name>-token" ("admin-token" for ops).
#pragma once
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/processes.hpp"

namespace ojs::test {

inline std::string write_role_tokens(const std::string& dir) {
  const nlohmann::json entries = nlohmann::json::array({
      {{"name", "node-a"}, {"roles", {"worker"}}, {"worker_ids", {"node-a"}}, {"sha256", token_sha256("node-a-token")}},
      {{"name", "pool"}, {"roles", {"worker"}}, {"worker_id_prefix", "pool-"}, {"sha256", token_sha256("pool-token")}},
      {{"name", "team-a"}, {"roles", {"producer"}}, {"tenant", "team-a"}, {"sha256", token_sha256("team-a-token")}},
      {{"name", "team-b"}, {"roles", {"producer"}}, {"tenant", "team-b"}, {"sha256", token_sha256("team-b-token")}},
      {{"name", "ops"}, {"roles", {"admin"}}, {"sha256", token_sha256("admin-token")}},
  });
  const std::string path = dir + "/tokens.json";
  std::ofstream(path) << entries.dump(2);
  return path;
}

// A broker on its own Redis reading that file, with a client per token. Test
// fixtures derive from it beside ::testing::Test.
struct RoleTokenBroker {
  explicit RoleTokenBroker(const std::string& name) : dir(make_temp_dir(name)) {}
  std::string dir;
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--auth-file", write_role_tokens(dir)}};
  Api node_a{broker.url(), "node-a-token"};
  Api pool{broker.url(), "pool-token"};
  Api team_a{broker.url(), "team-a-token"};
  Api team_b{broker.url(), "team-b-token"};
  Api admin{broker.url(), "admin-token"};
};

}  // namespace ojs::test
