// The Redis wire as the store speaks it, shared by the blocking pool and the
// fibers' connections: commands formatted in one piece, replies built straight
// into RedisValues.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

struct redisContext;

namespace ojs::broker {

// How long a sent command may go unanswered before Redis counts as stalled
// (StoreTimedOut): the blocking pool's socket timeout and the fibers' timer.
inline constexpr std::chrono::seconds kRedisAnswerWithin{5};

// From here on the context's replies are RedisValues (take them with take_value).
void use_value_replies(redisContext* ctx);
// A reply hiredis handed over (a root built for use_value_replies), moved out.
RedisValue take_value(void* reply);
// The commands appended to the context's output buffer, in RESP.
void append_commands(redisContext* ctx, const std::vector<std::vector<std::string>>& commands);

}  // namespace ojs::broker
