// Job progress in Redis (progress.lua): recorded only for active jobs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct ProgressOutcome {
  enum class Kind { recorded, ignored, conflict, not_found } kind = Kind::recorded;
  std::string progress;  // recorded: the value now stored ("" = none reported)
  std::string reason;    // ignored, conflict: why
};

class ProgressStore {
 public:
  explicit ProgressStore(RedisPool& redis) : redis_(redis) {}
  ProgressOutcome report(const std::string& queue, const std::string& id, const std::string& worker_id,
                         std::optional<double> progress, const std::string& data_json, std::int64_t default_visibility_ms,
                         const std::string& message_json = {});  // a JSON string, "" = none

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
