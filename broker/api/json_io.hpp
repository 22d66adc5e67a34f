// Request-body parsing and response building shared by every API module.
#pragma once
#include <nlohmann/json.hpp>

#include "broker/http/message.hpp"

namespace ojs::broker {

// Parses the body as a JSON object; 400 invalid_payload when it is not JSON.
nlohmann::json parse_json_body(const HttpRequest& request);
HttpResponse json_reply(int status, const nlohmann::json& body);

}  // namespace ojs::broker
