#include "broker/store/pool_store.hpp"

#include "broker/store/keys.hpp"
#include "broker/store/reply_integer.hpp"

namespace ojs::broker {

namespace {
long long count_of(const RedisValue& v) { return integer_of(v).value_or(0); }
std::string minute_field(std::int64_t minute) { return "m" + std::to_string(minute) + ":dispatched"; }
}  // namespace

PoolStore::Put PoolStore::put(const std::string& name, const std::string& json) {
  const auto replies = redis_.pipeline({{"HSET", keys::pools, name, json}, {"INCR", keys::pools_version}});
  return replies[0].integer == 1 ? Put::created : Put::updated;
}

std::optional<std::string> PoolStore::get(const std::string& name) {
  const auto v = redis_.command({"HGET", keys::pools, name});
  if (v.is_nil()) return std::nullopt;
  return v.str;
}

std::map<std::string, std::string> PoolStore::all() {
  const auto reply = redis_.command({"HGETALL", keys::pools});
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) out[reply.elements[i].str] = reply.elements[i + 1].str;
  return out;
}

std::size_t PoolStore::count() { return static_cast<std::size_t>(redis_.command({"HLEN", keys::pools}).integer); }

bool PoolStore::remove(const std::string& name) {
  const auto replies = redis_.pipeline({{"HDEL", keys::pools, name}, {"INCR", keys::pools_version}});
  return replies[0].integer == 1;
}

std::string PoolStore::version() {
  const auto v = redis_.command({"GET", keys::pools_version});
  return v.is_nil() ? "0" : v.str;
}

PoolStore::QueueRead PoolStore::read_queues(const std::vector<std::string>& queues, const QueueReadRequest& what) {
  std::vector<std::vector<std::string>> cmds{{"GET", keys::pools_version}};
  for (std::size_t i = 0; i < queues.size(); ++i) {
    if (what.dispatched)
      cmds.push_back({"HMGET", keys::stats(queues[i]), minute_field(what.minute), minute_field(what.minute - 1)});
    if (what.active) cmds.push_back({"ZCARD", keys::active(queues[i])});
    if (i < what.ready_classes.size())
      for (const auto& cls : what.ready_classes[i]) cmds.push_back({"ZCARD", keys::ready(queues[i], cls)});
  }
  const auto replies = redis_.pipeline(cmds);
  QueueRead out;
  out.version = replies[0].is_nil() ? "0" : replies[0].str;
  out.dispatched_now.assign(queues.size(), 0);
  out.dispatched_before.assign(queues.size(), 0);
  out.active.assign(queues.size(), 0);
  out.backlog.assign(queues.size(), 0);
  std::size_t r = 1;
  for (std::size_t i = 0; i < queues.size(); ++i) {
    if (what.dispatched) {
      const auto& pair = replies[r++].elements;
      if (pair.size() == 2) {
        out.dispatched_now[i] = count_of(pair[0]);
        out.dispatched_before[i] = count_of(pair[1]);
      }
    }
    if (what.active) out.active[i] = replies[r++].integer;
    if (i < what.ready_classes.size())
      for (std::size_t c = 0; c < what.ready_classes[i].size(); ++c) out.backlog[i] += replies[r++].integer;
  }
  return out;
}

}  // namespace ojs::broker
