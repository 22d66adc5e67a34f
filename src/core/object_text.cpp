#include "ojs/core/object_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
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

// A string as the serializer writes it, appended to `out`: quoted, escaped, invalid
// UTF-8 replaced (printable ASCII without '"' or '\\' is written as it is).
void append_string_text(std::string& out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (!plain) {
    out += json_text(std::string(s));
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

}  // namespace

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ObjectText::ObjectText(const nlohmann::json& object) {
  if (!object.is_object()) throw std::invalid_argument("ObjectText: not an object");
  auto parsed = from_text(json_text(object));
  if (!parsed) throw std::logic_error("ObjectText: the serializer's text did not split");
  *this = std::move(*parsed);
}

std::optional<ObjectText> ObjectText::from_text(const std::string& text) {
  // {"key":value,...}: no spaces, so each member runs from its key's quote to the
  // ',' (or the final '}') at depth 0.
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return std::nullopt;
  if (text.size() > UINT32_MAX / 2) return std::nullopt;  // offsets are 32-bit; a document is bounded far below
  ObjectText out;
  if (text.size() == 2) return out;
  out.bytes_.reserve(2 * text.size() + 512);  // room for the envelope's system fields, put after
  out.bytes_ = text;
  std::size_t i = 1;
  for (;;) {
    if (text[i] != '"') return std::nullopt;
    const std::size_t key_end = string_end(text, i);
    if (key_end == std::string::npos || key_end >= text.size() || text[key_end] != ':') return std::nullopt;
    Member m{static_cast<std::uint32_t>(i + 1), static_cast<std::uint32_t>(key_end - i - 2), static_cast<std::uint32_t>(i), 0};
    if (out.key_of(m).find('\\') != std::string_view::npos) {  // an escaped key: its decoded bytes order it
      const auto decoded = nlohmann::json::parse(text.substr(i, key_end - i), nullptr, false);
      if (!decoded.is_string()) return std::nullopt;
      m.key_at = static_cast<std::uint32_t>(out.bytes_.size());
      m.key_size = static_cast<std::uint32_t>(decoded.get_ref<const std::string&>().size());
      out.bytes_ += decoded.get_ref<const std::string&>();
    }
    const std::size_t end = value_end(text, key_end + 1);
    if (end == std::string::npos || end == key_end + 1) return std::nullopt;
    if (!out.members_.empty() && !(out.key_of(out.members_.back()) < out.key_of(m))) return std::nullopt;  // not in key order: not the serializer's
    m.text_size = static_cast<std::uint32_t>(end - i);
    out.members_.push_back(m);
    if (text[end] == '}') return end + 1 == text.size() ? std::optional<ObjectText>(std::move(out)) : std::nullopt;
    i = end + 1;
  }
}

std::vector<ObjectText::Member>::iterator ObjectText::lower_bound(std::string_view key) {
  return std::lower_bound(members_.begin(), members_.end(), key,
                          [this](const Member& m, std::string_view k) { return key_of(m) < k; });
}

const ObjectText::Member* ObjectText::find(std::string_view key) const {
  const auto it = std::lower_bound(members_.begin(), members_.end(), key,
                                   [this](const Member& m, std::string_view k) { return key_of(m) < k; });
  return it != members_.end() && key_of(*it) == key ? &*it : nullptr;
}

void ObjectText::put(const std::string& key, const std::string& text) {
  const std::size_t at = begin_put(key);
  bytes_ += text;
  end_put(key, at);
}

void ObjectText::put_string(const std::string& key, const std::string& value) {
  const std::size_t at = begin_put(key);
  append_string_text(bytes_, value);
  end_put(key, at);
}

void ObjectText::put_int(const std::string& key, std::int64_t value) { put(key, std::to_string(value)); }

// A put writes its key, then the member's text "\"key\":" and its value, at the end of
// bytes_; end_put files the member in key order.
std::size_t ObjectText::begin_put(const std::string& key) {
  const std::size_t at = bytes_.size();
  bytes_ += key;
  append_string_text(bytes_, key);
  bytes_ += ':';
  return at;
}

void ObjectText::end_put(const std::string& key, std::size_t at) {
  if (bytes_.size() > UINT32_MAX) throw std::length_error("ObjectText: too large");
  const Member m{static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(key.size()),
                 static_cast<std::uint32_t>(at + key.size()), static_cast<std::uint32_t>(bytes_.size() - at - key.size())};
  const auto it = lower_bound(key);
  if (it != members_.end() && key_of(*it) == key) *it = m;
  else members_.insert(it, m);
}

std::string ObjectText::value_text(std::string_view key) const {
  const Member* m = find(key);
  if (!m) return {};
  const std::string_view text = text_of(*m);
  // past the key and its ':' (the key's text is a JSON string: skip it as one)
  std::size_t i = 1;
  while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
  return std::string(text.substr(i + 2));
}

std::string ObjectText::str() const {
  std::size_t size = 2;
  for (const auto& m : members_) size += m.text_size + 1;
  std::string out;
  out.reserve(size);
  out += '{';
  for (const auto& m : members_) {
    if (out.size() > 1) out += ',';
    out += text_of(m);
  }
  out += '}';
  return out;
}

}  // namespace ojs
