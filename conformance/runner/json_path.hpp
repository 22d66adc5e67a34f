// JSONPath-like addressing used by conformance cases: "$.job.id",
// "$.jobs[0].args[0].order", "steps.step-1.response.body.job.id", "['a.b'].c".
// Member access, array indices and the `[*]` wildcard ("$.crons[*].name", used by
// the level-2 cron cases); no filters, which keeps failures easy to explain.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ojs::conformance {

struct AnyIndex {  // `[*]`: every element of an array
  bool operator==(const AnyIndex&) const = default;
};
using PathToken = std::variant<std::string, std::size_t, AnyIndex>;  // member name, array index or [*]

// Parses a path. A leading "$" (and the dot after it) is optional. Throws
// std::invalid_argument with a readable message on malformed input.
std::vector<PathToken> parse_path(std::string_view path);

// Returns the addressed value or nullptr when any part of the path is missing
// (or the path holds a wildcard: use select()).
const nlohmann::json* lookup(const nlohmann::json& root, const std::vector<PathToken>& path);
const nlohmann::json* lookup(const nlohmann::json& root, std::string_view path);

bool has_wildcard(const std::vector<PathToken>& path);
// The array of every value a wildcard path reaches (elements missing the rest of
// the path are left out); for a path without wildcards, the value as lookup() finds it.
std::optional<nlohmann::json> select(const nlohmann::json& root, const std::vector<PathToken>& path);

// True for strings that look like a body assertion path ("$", "$.x", "$[0]").
bool is_json_path(std::string_view text);

}  // namespace ojs::conformance
