#include "broker/store/settle.hpp"

#include <stdexcept>

#include "broker/store/keys.hpp"

namespace ojs::broker {

namespace {

// Journal lines settled per call: one call stays short (a usage line folds in
// ~35k instructions, a completion line settles in a few thousand).
const std::string kSettleBatch = "1000";

}  // namespace

std::vector<RedisValue> settled_reads(RedisPool& redis, const std::string& queue,
                                      const std::vector<std::vector<std::string>>& reads) {
  std::vector<std::vector<std::string>> batch{RedisPool::script_call("settle", keys::settle_keys(queue), {kSettleBatch})};
  batch.insert(batch.end(), reads.begin(), reads.end());
  auto replies = redis.pipeline(batch);
  if (replies.front().is_error()) throw std::runtime_error("Lua script settle failed: " + replies.front().str);
  if (replies.front().integer == 1) {  // more than a call's share waited: the reads saw part of it
    settle(redis, {queue});
    return redis.pipeline(reads);
  }
  replies.erase(replies.begin());
  return replies;
}

void settle(RedisPool& redis, const std::vector<std::string>& queues) {
  std::vector<const std::string*> waiting;
  if (queues.size() == 1) {
    waiting.push_back(&queues[0]);  // a reader's one queue: no round trip to look first
  } else if (!queues.empty()) {
    // Many queues (the maintenance pass, every queue each second): one pipelined
    // LLEN finds those with lines, and only they get a script call.
    std::vector<std::vector<std::string>> lengths;
    lengths.reserve(queues.size());
    for (const auto& q : queues) lengths.push_back({"LLEN", keys::usage_journal(q)});
    const auto replies = redis.pipeline(lengths);
    for (std::size_t i = 0; i < replies.size() && i < queues.size(); ++i)
      if (replies[i].integer > 0) waiting.push_back(&queues[i]);
  }
  while (!waiting.empty()) {
    std::vector<std::vector<std::string>> calls;
    calls.reserve(waiting.size());
    for (const auto* q : waiting) calls.push_back(RedisPool::script_call("settle", keys::settle_keys(*q), {kSettleBatch}));
    const auto replies = redis.pipeline(calls);
    std::vector<const std::string*> more;
    for (std::size_t i = 0; i < replies.size() && i < waiting.size(); ++i) {
      if (replies[i].is_error()) throw std::runtime_error("Lua script settle failed: " + replies[i].str);
      if (replies[i].integer == 1) more.push_back(waiting[i]);
    }
    waiting = std::move(more);
  }
}

}  // namespace ojs::broker
