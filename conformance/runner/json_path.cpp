#include "json_path.hpp"

#include <charconv>
#include <stdexcept>

namespace ojs::conformance {

namespace {

[[noreturn]] void bad(std::string_view path, const std::string& why) {
  throw std::invalid_argument("invalid path '" + std::string(path) + "': " + why);
}

}  // namespace

std::vector<PathToken> parse_path(std::string_view path) {
  std::vector<PathToken> tokens;
  std::size_t i = 0;
  if (!path.empty() && path[0] == '$') {
    i = 1;
    if (i < path.size() && path[i] == '.') ++i;
  }
  bool expect_member = true;  // at the start, or right after a '.'
  while (i < path.size()) {
    const char c = path[i];
    if (c == '[') {
      const auto close = path.find(']', i);
      if (close == std::string_view::npos) bad(path, "unterminated '['");
      std::string_view inner = path.substr(i + 1, close - i - 1);
      if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"') && inner.back() == inner.front()) {
        tokens.emplace_back(std::string(inner.substr(1, inner.size() - 2)));
      } else {
        std::size_t index = 0;
        const auto [end, ec] = std::from_chars(inner.data(), inner.data() + inner.size(), index);
        if (ec != std::errc() || end != inner.data() + inner.size() || inner.empty()) {
          bad(path, "array index must be a non-negative integer");
        }
        tokens.emplace_back(index);
      }
      i = close + 1;
      expect_member = false;
    } else if (c == '.') {
      if (expect_member) bad(path, "empty member name");
      ++i;
      expect_member = true;
    } else {
      if (!expect_member && !tokens.empty()) bad(path, "expected '.' or '['");
      const auto end = path.find_first_of(".[", i);
      const auto stop = end == std::string_view::npos ? path.size() : end;
      tokens.emplace_back(std::string(path.substr(i, stop - i)));
      i = stop;
      expect_member = false;
    }
  }
  if (expect_member && !tokens.empty()) bad(path, "trailing '.'");
  return tokens;
}

const nlohmann::json* lookup(const nlohmann::json& root, const std::vector<PathToken>& path) {
  const nlohmann::json* node = &root;
  for (const auto& token : path) {
    if (const auto* name = std::get_if<std::string>(&token)) {
      if (!node->is_object()) return nullptr;
      const auto it = node->find(*name);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else {
      const auto index = std::get<std::size_t>(token);
      if (!node->is_array() || index >= node->size()) return nullptr;
      node = &(*node)[index];
    }
  }
  return node;
}

const nlohmann::json* lookup(const nlohmann::json& root, std::string_view path) {
  return lookup(root, parse_path(path));
}

bool is_json_path(std::string_view text) {
  return text == "$" || text.starts_with("$.") || text.starts_with("$[");
}

}  // namespace ojs::conformance
