// JSONPath-like addressing used by conformance cases: "$.job.id",
// "$.jobs[0].args[0].order", "steps.step-1.response.body.job.id", "['a.b'].c".
// Only member access and array indices are supported (no wildcards, no filters):
// that is all the public cases use, and it keeps failures easy to explain.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ojs::conformance {

using PathToken = std::variant<std::string, std::size_t>;  // member name or array index

// Parses a path. A leading "$" (and the dot after it) is optional. Throws
// std::invalid_argument with a readable message on malformed input.
std::vector<PathToken> parse_path(std::string_view path);

// Returns the addressed value or nullptr when any part of the path is missing.
const nlohmann::json* lookup(const nlohmann::json& root, const std::vector<PathToken>& path);
const nlohmann::json* lookup(const nlohmann::json& root, std::string_view path);

// True for strings that look like a body assertion path ("$", "$.x", "$[0]").
bool is_json_path(std::string_view text);

}  // namespace ojs::conformance
