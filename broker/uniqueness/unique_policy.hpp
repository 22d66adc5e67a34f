// The unique-jobs policy (spec/ojs-unique-jobs.md): which dimensions make two jobs
// the same work, for how long, against which states, and what a duplicate does.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ojs::broker {

struct UniquePolicy {
  std::string key;                        // lowercase hex SHA-256 of the canonical dimensions
  std::vector<std::string> states;        // holder states that make a duplicate
  std::optional<std::int64_t> period_ms;  // from the holder's created_at; none: no expiry
  std::string on_conflict = "reject";     // reject | ignore | replace | replace_except_schedule
};

// Reads `unique` from a stored job document (PUSH keeps options.unique there).
// nullopt when the job has none; throws 400 invalid_request naming the field
// (`unique.keys`, `unique.args_keys`, ...) for an invalid policy.
std::optional<UniquePolicy> parse_unique_policy(const nlohmann::json& document);

// {"args"?, "meta"?, "queue"?, "type"} with keys sorted, compact: the text that is hashed.
std::string canonical_dimensions(const nlohmann::json& document, const nlohmann::json& policy);

}  // namespace ojs::broker
