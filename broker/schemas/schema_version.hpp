// A schema version: SemVer's {major}.{minor}.{patch} (ojs-schema-registry.md §6),
// the job-versioning form {major}.{minor}, or a plain {major} ("1", as the admin
// paths name them), each with an optional SemVer pre-release. Missing parts count 0
// in precedence: "1", "1.0" and "1.0.0" are one version, the first spelling kept.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ojs::broker::schemas {

inline constexpr std::size_t kMaxVersionLength = 64;
inline constexpr const char* kVersionRule =
    "must be a version: {major}[.{minor}[.{patch}]] of numbers without leading zeros, with an optional -pre.release (at most 64 characters)";

struct SchemaVersion {
  std::string text;
  std::vector<std::uint64_t> numbers;   // 1 to 3
  std::vector<std::string> prerelease;  // SemVer identifiers, empty for a release

  static std::optional<SchemaVersion> parse(std::string_view text);
  // SemVer precedence: < 0, 0, > 0.
  friend int compare(const SchemaVersion& a, const SchemaVersion& b);
  // A plain {major} as a JSON number (the admin paths' "1" answers 1), else the text.
  nlohmann::json to_json() const;
};

// A job's `version` (ojs-job-versioning.md §5.2) as a version: an integer or a
// version string; nullopt when absent or neither.
std::optional<SchemaVersion> job_version(const nlohmann::json& job);

}  // namespace ojs::broker::schemas
