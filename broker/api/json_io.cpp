#include "broker/api/json_io.hpp"

#include <algorithm>
#include <stdexcept>

#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace {

// Deepest array/object nesting of a JSON text, brackets inside strings skipped;
// stops counting once past `limit`. Linear, no recursion.
int nesting_depth(const std::string& text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size() && deepest <= limit; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

nlohmann::json parse_json_body(const HttpRequest& request) {
  if (request.body.empty())
    throw OjsError(ErrorCode::invalid_payload, "request body is empty; a JSON object is required",
                   {{"field", "body"}, {"rule", "must be a JSON object"}});
  if (nesting_depth(request.body, kMaxJsonDepth) > kMaxJsonDepth)
    throw OjsError(ErrorCode::invalid_payload, "request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                   {{"field", "body"}, {"rule", "at most " + std::to_string(kMaxJsonDepth) + " nested arrays/objects"}});
  nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
  if (body.is_discarded())
    throw OjsError(ErrorCode::invalid_payload, "request body is not valid JSON",
                   {{"field", "body"}, {"rule", "must be valid JSON (RFC 8259)"}});
  if (!body.is_object())
    throw OjsError(ErrorCode::invalid_request, "request body must be a JSON object",
                   {{"field", "body"}, {"rule", "must be a JSON object"}});
  return body;
}

std::string queue_name_param(const HttpRequest& request) {
  const auto& name = request.params.at("name");
  if (!is_valid_queue_name(name)) throw invalid_field("name", "must match ^[a-z0-9][a-z0-9.-]*$");
  return name;
}

int int_query(const HttpRequest& request, const char* name, int fallback, int min, int max) {
  const auto text = request.query_or(name, "");
  if (text.empty()) return fallback;
  try {
    std::size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size() && value >= min && value <= max) return value;
  } catch (const std::exception&) {
  }
  throw invalid_field(name, "must be an integer between " + std::to_string(min) + " and " + std::to_string(max));
}

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // echoed ids may be any bytes
}

HttpResponse json_reply(int status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.body = json_text(body);
  return r;
}

namespace {

// The end of the JSON string that starts at text[at] (a '"'): the index past its
// closing quote.
std::size_t string_end(const std::string& text, std::size_t at) {
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') ++i;
    else if (text[i] == '"') return i + 1;
  }
  return text.size();
}

// A key as the serializer writes it: quoted, escaped, invalid UTF-8 replaced.
std::string key_text(const std::string& key) {
  const bool plain = std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  return plain ? '"' + key + '"' : json_text(key);
}

}  // namespace

ObjectText::ObjectText(const nlohmann::json& object) {
  // The serializer's compact text of an object: {"key":value,...}, no spaces, keys in
  // order; each member runs from its key's quote to the next comma at depth 0.
  if (!object.is_object()) throw std::invalid_argument("ObjectText: not an object");
  const std::string text = json_text(object);
  auto it = object.begin();
  std::size_t i = 1;
  while (i < text.size() && text[i] == '"' && it != object.end()) {
    const std::size_t begin = i;
    i = string_end(text, i) + 1;  // past the key and its ':'
    int depth = 0;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '"') i = string_end(text, i) - 1;
      else if (c == '[' || c == '{') ++depth;
      else if (c == ']' || c == '}') {
        if (depth == 0) break;  // the object's own end
        --depth;
      } else if (c == ',' && depth == 0) break;
    }
    members_.emplace_hint(members_.end(), it.key(), text.substr(begin, i - begin));
    ++it;
    ++i;  // past the ',' (or the final '}')
  }
}

void ObjectText::put(const std::string& key, const std::string& text) {
  std::string member = key_text(key);
  member += ':';
  member += text;
  members_[key] = std::move(member);
}

HttpResponse object_reply(int status, const ObjectText& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.str();
  return r;
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

}  // namespace ojs::broker
