// The broker as the agent sees it: six calls, each one request and one reply.
// An interface so the agent loop can be tested against an in-process fake.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace ojs::worker {

struct BrokerReply {
  long status = 0;  // 0: the broker was not reached
  nlohmann::json body;
  std::string transport_error;

  bool ok() const { return status >= 200 && status < 300; }
  // Unreachable, overloaded or briefly failing: worth trying again later.
  bool retryable() const { return status == 0 || status == 429 || status == 502 || status == 503 || status == 504; }
  std::string describe() const;
};

class BrokerApi {
 public:
  virtual ~BrokerApi() = default;
  virtual BrokerReply fetch(const nlohmann::json& body) = 0;      // POST /ojs/v1/workers/fetch
  virtual BrokerReply ack(const nlohmann::json& body) = 0;        // POST /ojs/v1/workers/ack
  virtual BrokerReply nack(const nlohmann::json& body) = 0;       // POST /ojs/v1/workers/nack
  virtual BrokerReply heartbeat(const nlohmann::json& body) = 0;  // POST /ojs/v1/workers/heartbeat
  virtual BrokerReply commit_checkpoint(const std::string& job_id, const nlohmann::json& body) = 0;  // POST /ojs/v1/jobs/{id}/checkpoint
  // POST /ojs/v1/workers/logs. Best effort (a broker without it: status 0, the
  // agent goes on): a fake that does not care about logs need not implement it.
  virtual BrokerReply ship_logs(const nlohmann::json& body) {
    (void)body;
    return {};
  }
};

}  // namespace ojs::worker
