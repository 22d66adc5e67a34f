#include "worker/agent/http_broker_api.hpp"

namespace ojs::worker {

std::string BrokerReply::describe() const {
  // Built by append: GCC 12 warns falsely (-Wstringop-overflow) on operator+ chains here.
  std::string text;
  if (status == 0) return text.append("unreachable: ").append(transport_error);
  text.append("HTTP ").append(std::to_string(status));
  if (body.is_object() && body.contains("error") && body["error"].is_object())
    text.append(" ").append(body["error"].value("code", "")).append(": ").append(body["error"].value("message", ""));
  return text;
}

BrokerReply HttpBrokerApi::post(const std::string& path, const nlohmann::json& body) {
  // A job's output rides in bodies (an ACK's stdout tail, a NACK's stderr_tail, log
  // chunks) and may be any bytes: what is not UTF-8 is sent as U+FFFD, never a throw
  // that would leave the report undelivered.
  const HttpResponse response = client_.post(path, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  BrokerReply reply;
  reply.status = response.status;
  reply.transport_error = response.transport_error;
  reply.body = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (reply.body.is_discarded()) reply.body = nullptr;
  return reply;
}

}  // namespace ojs::worker
