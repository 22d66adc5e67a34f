#include "json_path.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace ojs::conformance {

namespace {

[[noreturn]] void bad(std::string_view path, const std::string& why) {
  throw std::invalid_argument("invalid path '" + std::string(path) + "': " + why);
}

// The inside of `[?(@.member==value)]`: value quoted ('x' or "x") or a JSON scalar.
MemberFilter parse_filter(std::string_view path, std::string_view inner) {
  if (!inner.starts_with("?(@.") || !inner.ends_with(")")) bad(path, "a filter reads [?(@.member==value)]");
  const auto body = inner.substr(4, inner.size() - 5);
  const auto eq = body.find("==");
  if (eq == std::string_view::npos || eq == 0) bad(path, "a filter reads [?(@.member==value)]");
  MemberFilter f{std::string(body.substr(0, eq)), nullptr};
  const auto value = body.substr(eq + 2);
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front()) {
    f.value = std::string(value.substr(1, value.size() - 2));
  } else {
    f.value = nlohmann::json::parse(value, nullptr, false);
    if (f.value.is_discarded()) bad(path, "filter value must be quoted or a JSON scalar");
  }
  return f;
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
      } else if (inner == "*") {
        tokens.emplace_back(AnyIndex{});
      } else if (inner.starts_with("?")) {
        tokens.emplace_back(parse_filter(path, inner));
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

namespace {

// path[i..] from node. A member missing as such may be a key holding dots
// ("ojs.codec.encodings" in meta, as the extension cases send it): the keys made of
// it and the members after it are tried, shortest first, each with the rest of the path.
const nlohmann::json* lookup_from(const nlohmann::json* node, const std::vector<PathToken>& path, std::size_t i) {
  for (; i < path.size(); ++i) {
    const auto& token = path[i];
    if (const auto* name = std::get_if<std::string>(&token)) {
      if (!node->is_object()) return nullptr;
      if (const auto it = node->find(*name); it != node->end()) {
        if (const auto* found = lookup_from(&*it, path, i + 1)) return found;
      }
      std::string key = *name;
      for (std::size_t j = i + 1; j < path.size() && std::holds_alternative<std::string>(path[j]); ++j) {
        key += "." + std::get<std::string>(path[j]);
        if (const auto it = node->find(key); it != node->end())
          if (const auto* found = lookup_from(&*it, path, j + 1)) return found;
      }
      return nullptr;
    } else if (std::holds_alternative<AnyIndex>(token)) {
      return nullptr;  // many values: see select()
    } else if (const auto* filter = std::get_if<MemberFilter>(&token)) {
      if (!node->is_array()) return nullptr;
      const auto hit = std::find_if(node->begin(), node->end(), [filter](const nlohmann::json& e) {
        return e.is_object() && e.contains(filter->member) && e[filter->member] == filter->value;
      });
      if (hit == node->end()) return nullptr;
      node = &*hit;
    } else {
      const auto index = std::get<std::size_t>(token);
      if (!node->is_array() || index >= node->size()) return nullptr;
      node = &(*node)[index];
    }
  }
  return node;
}

}  // namespace

const nlohmann::json* lookup(const nlohmann::json& root, const std::vector<PathToken>& path) {
  return lookup_from(&root, path, 0);
}

const nlohmann::json* lookup(const nlohmann::json& root, std::string_view path) {
  return lookup(root, parse_path(path));
}

bool has_wildcard(const std::vector<PathToken>& path) {
  return std::any_of(path.begin(), path.end(), [](const PathToken& t) { return std::holds_alternative<AnyIndex>(t); });
}

std::optional<nlohmann::json> select(const nlohmann::json& root, const std::vector<PathToken>& path) {
  const auto star = std::find_if(path.begin(), path.end(), [](const PathToken& t) { return std::holds_alternative<AnyIndex>(t); });
  if (star == path.end()) {
    const auto* found = lookup(root, path);
    return found ? std::optional<nlohmann::json>(*found) : std::nullopt;
  }
  const auto* array = lookup(root, std::vector<PathToken>(path.begin(), star));
  if (!array || !array->is_array()) return std::nullopt;
  const std::vector<PathToken> rest(star + 1, path.end());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& element : *array) {
    auto value = select(element, rest);
    if (!value) continue;
    if (has_wildcard(rest) && value->is_array()) {
      for (auto& v : *value) out.push_back(std::move(v));
    } else {
      out.push_back(std::move(*value));
    }
  }
  return out;
}

bool is_json_path(std::string_view text) {
  return text == "$" || text.starts_with("$.") || text.starts_with("$[");
}

}  // namespace ojs::conformance
