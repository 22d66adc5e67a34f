#include "ojs/core/object_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace ojs {

namespace {

// The index past the closing quote of the JSON string that starts at text[at]; npos
// when it does not end.
std::size_t string_end(const std::string& text, std::size_t at) {
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') ++i;
    else if (text[i] == '"') return i + 1;
  }
  return std::string::npos;
}

// The end of the value that starts at text[at] in a compact object's text: the
// index of the ',' or '}' that closes it at depth 0; npos when the text ends first.
std::size_t value_end(const std::string& text, std::size_t at) {
  int depth = 0;
  for (std::size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      i = string_end(text, i);
      if (i == std::string::npos) return i;
      --i;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (depth == 0) return c == '}' ? i : std::string::npos;
      --depth;
    } else if (c == ',' && depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

// A string as the serializer writes it: quoted, escaped, invalid UTF-8 replaced
// (printable ASCII without '"' or '\\' is written as it is).
std::string string_text(const std::string& s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  return plain ? '"' + s + '"' : json_text(s);
}

}  // namespace

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ObjectText::ObjectText(const nlohmann::json& object) {
  if (!object.is_object()) throw std::invalid_argument("ObjectText: not an object");
  auto parsed = from_text(json_text(object));
  if (!parsed) throw std::logic_error("ObjectText: the serializer's text did not split");
  members_ = std::move(parsed->members_);
}

std::optional<ObjectText> ObjectText::from_text(const std::string& text) {
  // {"key":value,...}: no spaces, so each member runs from its key's quote to the
  // ',' (or the final '}') at depth 0.
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return std::nullopt;
  ObjectText out;
  if (text.size() == 2) return out;
  std::size_t i = 1;
  for (;;) {
    if (text[i] != '"') return std::nullopt;
    const std::size_t key_end = string_end(text, i);
    if (key_end == std::string::npos || key_end >= text.size() || text[key_end] != ':') return std::nullopt;
    std::string key = text.substr(i + 1, key_end - i - 2);
    if (key.find('\\') != std::string::npos) {  // an escaped key: its decoded bytes order it
      const auto decoded = nlohmann::json::parse(text.substr(i, key_end - i), nullptr, false);
      if (!decoded.is_string()) return std::nullopt;
      key = decoded.get<std::string>();
    }
    const std::size_t end = value_end(text, key_end + 1);
    if (end == std::string::npos || end == key_end + 1) return std::nullopt;
    if (!out.members_.empty() && !(out.members_.rbegin()->first < key)) return std::nullopt;  // not in key order: not the serializer's
    out.members_.emplace_hint(out.members_.end(), std::move(key), text.substr(i, end - i));
    if (text[end] == '}') return end + 1 == text.size() ? std::optional<ObjectText>(std::move(out)) : std::nullopt;
    i = end + 1;
  }
}

void ObjectText::put(const std::string& key, const std::string& text) {
  std::string member = string_text(key);
  member += ':';
  member += text;
  members_[key] = std::move(member);
}

void ObjectText::put_string(const std::string& key, const std::string& value) { put(key, string_text(value)); }

void ObjectText::put_int(const std::string& key, std::int64_t value) { put(key, std::to_string(value)); }

std::string ObjectText::value_text(const std::string& key) const {
  const auto it = members_.find(key);
  if (it == members_.end()) return {};
  return it->second.substr(string_end(it->second, 0) + 1);  // past the key and its ':'
}

std::string ObjectText::str() const {
  std::size_t size = 2;
  for (const auto& [key, member] : members_) size += member.size() + 1;
  std::string out;
  out.reserve(size);
  out += '{';
  for (const auto& [key, member] : members_) {
    if (out.size() > 1) out += ',';
    out += member;
  }
  out += '}';
  return out;
}

}  // namespace ojs
