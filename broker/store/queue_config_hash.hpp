// A queue's config hash as text, the form QueueConfigStore reads and writes.
// Which fields there are and what they mean is governance's: one row per member
// in the field table (broker/governance/queue_config.hpp); claim.lua and push.lua
// read some of them (docs/architecture.md, "Redis keys").
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ojs::broker {

struct StoredQueueConfig {
  long long version = 0;  // 0: never configured
  std::optional<std::int64_t> updated_at_ms;
  std::map<std::string, std::string> fields;  // the fields asked for that are set
};

// A whole configuration to write (queue_config.lua): the `replaced` fields are
// removed, then `fields` set; the tenant quota hash is replaced by tenant_max_gpus.
struct QueueConfigWrite {
  std::vector<std::string> replaced;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<std::pair<std::string, long long>> tenant_max_gpus;  // '*' = the default
  std::string cohort;  // the cohort the queue is in ("" : none): a member is listed in the queue directory
};

}  // namespace ojs::broker
