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

}  // namespace ojs::broker
