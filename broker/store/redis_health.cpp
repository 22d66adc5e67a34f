#include "broker/store/redis_health.hpp"

#include <ctime>

#include "broker/store/keys.hpp"
#include "broker/store/store_error.hpp"

namespace ojs::broker {

std::string RedisHealth::write_refusal() {
  try {
    redis_.command({"SET", keys::health_probe, std::to_string(time(nullptr)), "PX", "60000"});
    return {};
  } catch (const StoreUnavailable& e) {
    return e.what();
  }
}

std::optional<long long> RedisHealth::connected_replicas() {
  try {
    const auto info = redis_.command({"INFO", "replication"}).str;
    const std::string field = "connected_slaves:";
    const auto at = info.find(field);
    if (at == std::string::npos) return std::nullopt;
    return std::stoll(info.substr(at + field.size()));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace ojs::broker
