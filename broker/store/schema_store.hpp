// Registered job-type schemas in Redis (ojs-schema-registry.md): one hash per tenant
// and job type, version -> the registration as JSON text (broker/schemas parses it).
// Every key is in the global slot (keys.hpp), so a Redis Cluster serves them too.
#pragma once
#include <map>
#include <string>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class SchemaStore {
 public:
  explicit SchemaStore(RedisPool& redis) : redis_(redis) {}

  enum class Put { stored, exists, limit };
  // A new version, unless it exists or the type has `max_versions` already.
  Put put(const std::string& tenant, const std::string& job_type, const std::string& version, const std::string& json,
          long long max_versions);
  std::map<std::string, std::string> versions(const std::string& tenant, const std::string& job_type);  // version -> JSON
  // False when the version was not there.
  bool remove(const std::string& tenant, const std::string& job_type, const std::string& version);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
