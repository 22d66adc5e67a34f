#include "ojs/ml/storage_uri.hpp"

#include <array>

namespace ojs::ml {

namespace {

// Splits on '/', dropping empty and "." segments; false on a ".." segment.
bool clean_segments(std::string_view path, std::vector<std::string_view>& out) {
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    const auto seg = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (seg == "..") return false;
    if (!seg.empty() && seg != ".") out.push_back(seg);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return true;
}

bool has_control_or_backslash(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') return true;
  return false;
}

}  // namespace

std::optional<std::string> normalise_storage_uri(std::string_view uri) {
  static constexpr std::array<std::string_view, 4> schemes{"s3", "gs", "az", "file"};
  if (has_control_or_backslash(uri)) return std::nullopt;
  const auto sep = uri.find("://");
  if (sep == std::string_view::npos) return std::nullopt;
  const auto scheme = uri.substr(0, sep);
  bool known = false;
  for (auto s : schemes) known = known || s == scheme;
  if (!known) return std::nullopt;
  const auto rest = uri.substr(sep + 3);
  const auto slash = rest.find('/');
  const auto authority = rest.substr(0, slash);
  if ((scheme == "file") != authority.empty()) return std::nullopt;  // buckets required; file URIs have none
  if (authority.find_first_of("@:?#%") != std::string_view::npos || authority == "." || authority == "..") return std::nullopt;
  const auto path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  std::vector<std::string_view> segments;
  if (!clean_segments(path, segments)) return std::nullopt;
  std::string out = std::string(scheme) + "://" + std::string(authority);
  for (auto s : segments) {
    out += '/';
    out.append(s);
  }
  if (!path.empty() && path.back() == '/' && !segments.empty()) out += "/";
  if (segments.empty()) out += "/";
  return out;
}

bool is_safe_relative_key(std::string_view key) {
  if (key.empty() || key.front() == '/' || has_control_or_backslash(key)) return false;
  const auto colon = key.find(':');
  if (colon != std::string_view::npos && colon < key.find('/')) return false;  // looks like a scheme
  std::vector<std::string_view> segments;
  return clean_segments(key, segments) && !segments.empty();
}

bool storage_uri_allowed(std::string_view uri, const std::vector<std::string>& prefixes) {
  const auto norm = normalise_storage_uri(uri);
  if (!norm) return false;
  for (const auto& p : prefixes) {
    auto prefix = normalise_storage_uri(p);
    if (!prefix) continue;
    if (prefix->back() != '/') *prefix += '/';  // "s3://b/ck" allows "s3://b/ck/..." but not "s3://b/ckx"
    if (norm->rfind(*prefix, 0) == 0 || *norm + "/" == *prefix) return true;
  }
  return false;
}

}  // namespace ojs::ml
