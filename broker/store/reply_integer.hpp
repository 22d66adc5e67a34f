// The one parse of a number out of a Redis reply (an integer reply, or integer
// text such as an HMGET of a counter or a configured limit).
#pragma once
#include <optional>
#include <string>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

// nullopt for nil, empty or non-numeric text.
inline std::optional<long long> integer_of(const RedisValue& v) {
  if (v.type == RedisValue::Type::integer) return v.integer;
  if (v.is_nil() || v.str.empty()) return std::nullopt;
  try {
    return std::stoll(v.str);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace ojs::broker
