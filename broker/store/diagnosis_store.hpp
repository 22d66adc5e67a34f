// The diagnosis records (scheduling/diagnosis_log): per queue and requirement
// class, one hash worker id -> that worker's latest judgement (JSON), expiring
// when no worker writes it for a while.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class DiagnosisStore {
 public:
  struct Record {
    std::string key;  // record_key(queue, class)
    std::string worker_id, judgement_json;
  };
  explicit DiagnosisStore(RedisPool& redis) : redis_(redis) {}
  static std::string record_key(const std::string& queue, const std::string& class_id);
  // One pipelined write; each written hash expires after `ttl_ms` without writes.
  void write(const std::vector<Record>& records, std::int64_t ttl_ms);
  // worker id -> judgement JSON of one class.
  std::vector<std::pair<std::string, std::string>> read(const std::string& queue, const std::string& class_id);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
