#include "broker/api/json_io.hpp"

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

HttpResponse json_reply(int status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump();
  return r;
}

}  // namespace ojs::broker
