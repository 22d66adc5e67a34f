#include "broker/store/stats_history_store.hpp"

#include "broker/store/keys.hpp"
#include "broker/store/settle.hpp"

namespace ojs::broker {

namespace {
std::string field(std::int64_t minute, const char* what) { return "m" + std::to_string(minute) + ":" + what; }
long long count_of(const RedisValue& v) { return v.is_nil() ? 0 : std::stoll(v.str); }
}  // namespace

std::vector<MinuteCounts> StatsHistoryStore::range(const std::vector<std::string>& queues, std::int64_t from_minute,
                                                   std::int64_t to_minute) {
  std::vector<MinuteCounts> out;
  for (auto m = from_minute; m <= to_minute; ++m) out.push_back({m, 0, 0});
  if (out.empty() || queues.empty()) return out;
  settle(redis_, queues);  // the processed and failed counts are settle.lua's
  std::vector<std::string> hmget{"HMGET", ""};
  for (const auto& c : out) {
    hmget.push_back(field(c.minute, "processed"));
    hmget.push_back(field(c.minute, "failed"));
  }
  std::vector<std::vector<std::string>> cmds;
  for (const auto& q : queues) {
    hmget[1] = keys::stats(q);
    cmds.push_back(hmget);
  }
  for (const auto& reply : redis_.pipeline(cmds))
    for (std::size_t i = 0; i < out.size() && 2 * i + 1 < reply.elements.size(); ++i) {
      out[i].processed += count_of(reply.elements[2 * i]);
      out[i].failed += count_of(reply.elements[2 * i + 1]);
    }
  return out;
}

long long StatsHistoryStore::trim(const std::string& queue, std::int64_t before_minute) {
  std::vector<std::string> hdel{"HDEL", keys::stats(queue)};
  for (const auto& f : redis_.command({"HKEYS", keys::stats(queue)}).elements) {
    if (f.str.size() < 2 || f.str[0] != 'm' || f.str[1] < '0' || f.str[1] > '9') continue;
    if (std::stoll(f.str.substr(1, f.str.find(':') - 1)) < before_minute) hdel.push_back(f.str);
  }
  if (hdel.size() == 2) return 0;
  return redis_.command(hdel).integer;
}

}  // namespace ojs::broker
