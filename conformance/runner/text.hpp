// Small string helpers shared by the runner's files.
#pragma once
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace ojs::conformance {

inline std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

inline std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

// Shortens text for one-line messages.
inline std::string clip(std::string text, std::size_t limit = 200) {
  if (text.size() > limit) text = text.substr(0, limit - 3) + "...";
  return text;
}

}  // namespace ojs::conformance
