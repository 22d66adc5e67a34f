// A FETCH body, validated (POST /ojs/v1/workers/fetch).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ojs::broker {

struct FetchRequest {
  std::vector<std::string> queues;  // may be empty when `pool` is given: the pool's queues
  std::string pool;                 // the worker's pool ("" = none): its queues in its strategy's order
  int count = 1;
  std::string worker_id;
  std::optional<std::int64_t> visibility_timeout_ms;
  std::optional<nlohmann::json> capabilities;
  std::string capabilities_text;  // the same as compact JSON, dumped once: the registry's change check and the scheduler's memo key

  static FetchRequest parse(const nlohmann::json& body, int max_count);
};

}  // namespace ojs::broker
