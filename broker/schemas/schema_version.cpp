#include "broker/schemas/schema_version.hpp"

#include <algorithm>

namespace ojs::broker::schemas {

namespace {

bool all_digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }); }

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const auto end = s.find(separator, start);
    out.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

// SemVer §11.4: numeric identifiers compare as numbers and rank below alphanumeric ones.
int compare_identifiers(const std::string& a, const std::string& b) {
  const bool an = all_digits(a), bn = all_digits(b);
  if (an && bn) return a.size() != b.size() ? (a.size() < b.size() ? -1 : 1) : a.compare(b);
  if (an != bn) return an ? -1 : 1;
  return a.compare(b);
}

}  // namespace

std::optional<SchemaVersion> SchemaVersion::parse(std::string_view text) {
  if (text.empty() || text.size() > kMaxVersionLength) return std::nullopt;
  SchemaVersion out{std::string(text), {}, {}};
  const auto dash = text.find('-');
  const auto release = text.substr(0, dash);
  const auto parts = split(release, '.');
  if (parts.size() > 3) return std::nullopt;
  for (const auto part : parts) {
    if (!all_digits(part) || part.size() > 18 || (part.size() > 1 && part[0] == '0')) return std::nullopt;
    out.numbers.push_back(std::stoull(std::string(part)));
  }
  if (dash != std::string_view::npos) {
    for (const auto id : split(text.substr(dash + 1), '.')) {
      if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) {
            return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
          }))
        return std::nullopt;
      if (all_digits(id) && id.size() > 1 && id[0] == '0') return std::nullopt;
      out.prerelease.emplace_back(id);
    }
  }
  return out;
}

int compare(const SchemaVersion& a, const SchemaVersion& b) {
  for (std::size_t i = 0; i < 3; ++i) {
    const auto x = i < a.numbers.size() ? a.numbers[i] : 0, y = i < b.numbers.size() ? b.numbers[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  if (a.prerelease.empty() || b.prerelease.empty())  // a release ranks above its pre-releases
    return a.prerelease.empty() == b.prerelease.empty() ? 0 : (a.prerelease.empty() ? 1 : -1);
  for (std::size_t i = 0; i < std::min(a.prerelease.size(), b.prerelease.size()); ++i)
    if (const int c = compare_identifiers(a.prerelease[i], b.prerelease[i]); c != 0) return c < 0 ? -1 : 1;
  return a.prerelease.size() == b.prerelease.size() ? 0 : (a.prerelease.size() < b.prerelease.size() ? -1 : 1);
}

nlohmann::json SchemaVersion::to_json() const {
  if (numbers.size() == 1 && prerelease.empty() && numbers[0] <= (1ULL << 53)) return numbers[0];
  return text;
}

std::optional<SchemaVersion> job_version(const nlohmann::json& job) {
  if (!job.is_object() || !job.contains("version")) return std::nullopt;
  const auto& v = job["version"];
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() >= 0)) return SchemaVersion::parse(v.dump());
  if (v.is_string()) return SchemaVersion::parse(v.get<std::string>());
  return std::nullopt;
}

}  // namespace ojs::broker::schemas
