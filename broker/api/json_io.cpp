#include "broker/api/json_io.hpp"

#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

nlohmann::json parse_json_body(const HttpRequest& request) {
  if (request.body.empty())
    throw OjsError(ErrorCode::invalid_payload, "request body is empty; a JSON object is required",
                   {{"field", "body"}, {"rule", "must be a JSON object"}});
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
  r.body = body.dump();
  return r;
}

}  // namespace ojs::broker
