// JSONPath-like addressing used by conformance cases: "$.job.id",
// "$.jobs[0].args[0].order", "steps.step-1.response.body.job.id", "['a.b'].c".
// Member access, array indices, the `[*]` wildcard ("$.crons[*].name", used by
// the level-2 cron cases) and one filter form, `[?(@.member=='value')]` (level 1's
// dead letter cases), which addresses the first element whose member equals the
// value, like an index: no such element reads as missing. A member that is missing
// is tried joined with the members after it, as a key that holds dots
// ("$.job.meta.ojs.codec.key_id" reads meta["ojs.codec.key_id"], as the extension
// cases send it); nested members are tried first, then such keys, shortest first.
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
struct MemberFilter {  // `[?(@.member==value)]`
  std::string member;
  nlohmann::json value;
  bool operator==(const MemberFilter&) const = default;
};
using PathToken = std::variant<std::string, std::size_t, AnyIndex, MemberFilter>;  // member name, array index, [*] or a filter

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
