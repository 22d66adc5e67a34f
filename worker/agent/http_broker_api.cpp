#include "worker/agent/http_broker_api.hpp"

namespace ojs::worker {

std::string BrokerReply::describe() const {
  if (status == 0) return "unreachable: " + transport_error;
  std::string text = "HTTP " + std::to_string(status);
  if (body.is_object() && body.contains("error") && body["error"].is_object())
    text += " " + body["error"].value("code", "") + ": " + body["error"].value("message", "");
  return text;
}

BrokerReply HttpBrokerApi::post(const std::string& path, const nlohmann::json& body) {
  const HttpResponse response = client_.post(path, body.dump());
  BrokerReply reply;
  reply.status = response.status;
  reply.transport_error = response.transport_error;
  reply.body = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (reply.body.is_discarded()) reply.body = nullptr;
  return reply;
}

}  // namespace ojs::worker
