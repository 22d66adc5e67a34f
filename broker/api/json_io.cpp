#include "broker/api/json_io.hpp"

#include <algorithm>

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

HttpResponse json_reply(int status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.body = json_text(body);
  return r;
}

HttpResponse replayed_reply(int status, const nlohmann::json& body, const std::string& location) {
  auto r = json_reply(status, body);
  if (!location.empty()) r.headers.emplace_back("Location", location);
  r.headers.emplace_back("Idempotent-Replayed", "true");
  return r;
}

HttpResponse object_reply(int status, const ObjectText& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.str();
  return r;
}

}  // namespace ojs::broker
