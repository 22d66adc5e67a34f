// BrokerApi over HTTP with the shared libcurl client (keep-alive, bearer
// token, TLS options). Not thread-safe: the agent loop owns it.
#pragma once
#include "ojs/client/http_client.hpp"
#include "worker/agent/broker_api.hpp"

namespace ojs::worker {

class HttpBrokerApi : public BrokerApi {
 public:
  explicit HttpBrokerApi(HttpClientOptions options) : client_(std::move(options)) {}

  BrokerReply fetch(const nlohmann::json& body) override { return post("/ojs/v1/workers/fetch", body); }
  BrokerReply ack(const nlohmann::json& body) override { return post("/ojs/v1/workers/ack", body); }
  BrokerReply nack(const nlohmann::json& body) override { return post("/ojs/v1/workers/nack", body); }
  BrokerReply heartbeat(const nlohmann::json& body) override { return post("/ojs/v1/workers/heartbeat", body); }
  BrokerReply commit_checkpoint(const std::string& job_id, const nlohmann::json& body) override {
    return post("/ojs/v1/jobs/" + job_id + "/checkpoint", body);
  }
  BrokerReply ship_logs(const nlohmann::json& body) override { return post("/ojs/v1/workers/logs", body); }

 private:
  BrokerReply post(const std::string& path, const nlohmann::json& body);
  HttpClient client_;
};

}  // namespace ojs::worker
