#include "broker/store/schema_store.hpp"

#include "broker/store/keys.hpp"

namespace ojs::broker {

SchemaStore::Put SchemaStore::put(const std::string& tenant, const std::string& job_type, const std::string& version,
                                  const std::string& json, long long max_versions) {
  const auto reply =
      redis_.eval("schema_put", {keys::schemas(tenant, job_type)}, {version, json, std::to_string(max_versions)}).integer;
  if (reply == 1) return Put::stored;
  return reply == 0 ? Put::exists : Put::limit;
}

std::map<std::string, std::string> SchemaStore::versions(const std::string& tenant, const std::string& job_type) {
  const auto reply = redis_.command({"HGETALL", keys::schemas(tenant, job_type)});
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) out[reply.elements[i].str] = reply.elements[i + 1].str;
  return out;
}

bool SchemaStore::remove(const std::string& tenant, const std::string& job_type, const std::string& version) {
  return redis_.command({"HDEL", keys::schemas(tenant, job_type), version}).integer == 1;
}

}  // namespace ojs::broker
