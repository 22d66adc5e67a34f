// The one parse of a number out of a Redis reply (an integer reply, or integer
// text such as an HMGET of a counter or a configured limit).
#pragma once
#include <cstdint>
#include <map>
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

// A TIME reply (seconds, microseconds) as milliseconds; nullopt when it is not one.
inline std::optional<std::int64_t> time_reply_ms(const RedisValue& time) {
  if (time.elements.size() != 2) return std::nullopt;
  const auto s = integer_of(time.elements[0]), us = integer_of(time.elements[1]);
  if (!s || !us) return std::nullopt;
  return *s * 1000 + *us / 1000;
}

// A flat HGETALL reply of counters or limits as a map (entries that are not numbers left out).
inline std::map<std::string, long long> integer_hash(const RedisValue& flat) {
  std::map<std::string, long long> out;
  for (std::size_t i = 0; i + 1 < flat.elements.size(); i += 2)
    if (auto n = integer_of(flat.elements[i + 1])) out[flat.elements[i].str] = *n;
  return out;
}

}  // namespace ojs::broker
