// The token file: a JSON array of principals,
//   [{"name": "team-a-producer", "roles": ["producer"], "sha256": "<hex>", "tenant": "team-a"}]
// ("role": "admin" is accepted for a single role; "tenant" is optional and pins
// the tenant of every job the token pushes). Tokens themselves are never stored.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "broker/auth/identity.hpp"

namespace ojs::broker::auth {

struct Principal {
  Identity identity;
  std::string sha256;  // lowercase hex of the token's SHA-256
};

// Throws std::runtime_error naming the entry and field on any malformed entry.
std::vector<Principal> parse_token_file(const nlohmann::json& entries);
std::vector<Principal> load_token_file(const std::string& path);

}  // namespace ojs::broker::auth
