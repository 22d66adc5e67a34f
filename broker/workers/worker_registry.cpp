#include "broker/workers/worker_registry.hpp"

#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {
const std::string kWorkers = "ojs:workers";  // zset worker id -> last seen (ms)
std::string worker_key(const std::string& id) { return "ojs:worker:" + id; }

WorkerInfo from_hash(const std::string& id, const RedisValue& v) {
  WorkerInfo w;
  w.id = id;
  for (std::size_t i = 0; i + 1 < v.elements.size(); i += 2) {
    const auto& k = v.elements[i].str;
    const auto& val = v.elements[i + 1].str;
    if (k == "state") w.state = val;
    else if (k == "last_seen") w.last_seen_ms = std::stoll(val);
    else if (k == "capabilities") w.capabilities = nlohmann::json::parse(val, nullptr, false);
    else if (k == "queues") {
      auto q = nlohmann::json::parse(val, nullptr, false);
      if (q.is_array()) w.queues = q.get<std::vector<std::string>>();
    }
  }
  if (w.capabilities.is_discarded()) w.capabilities = nullptr;
  return w;
}
}  // namespace

std::string WorkerRegistry::touch(const std::string& worker_id, const nlohmann::json* capabilities,
                                  const std::vector<std::string>& queues) {
  const auto now = std::to_string(now_ms());
  std::vector<std::string> hset{"HSET", worker_key(worker_id), "last_seen", now};
  if (capabilities) {
    hset.push_back("capabilities");
    hset.push_back(capabilities->dump());
  }
  if (!queues.empty()) {
    hset.push_back("queues");
    hset.push_back(nlohmann::json(queues).dump());
  }
  auto replies = redis_.pipeline({hset, {"ZADD", kWorkers, now, worker_id}, {"HGET", worker_key(worker_id), "state"}});
  return replies[2].is_nil() ? "running" : replies[2].str;
}

void WorkerRegistry::set_state(const std::string& worker_id, const std::string& state) {
  redis_.pipeline({{"HSET", worker_key(worker_id), "state", state}, {"ZADD", kWorkers, "NX", "0", worker_id}});
}

std::optional<WorkerInfo> WorkerRegistry::get(const std::string& worker_id) {
  auto v = redis_.command({"HGETALL", worker_key(worker_id)});
  if (v.elements.empty()) return std::nullopt;
  return from_hash(worker_id, v);
}

std::vector<WorkerInfo> WorkerRegistry::list() {
  auto ids = redis_.command({"ZRANGE", kWorkers, "0", "-1"});
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids.elements) cmds.push_back({"HGETALL", worker_key(id.str)});
  std::vector<WorkerInfo> out;
  if (cmds.empty()) return out;
  auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i < replies.size(); ++i) out.push_back(from_hash(ids.elements[i].str, replies[i]));
  return out;
}

std::vector<std::string> WorkerRegistry::stale(std::int64_t older_than_ms) {
  auto v = redis_.command({"ZRANGEBYSCORE", kWorkers, "-inf", std::to_string(older_than_ms)});
  std::vector<std::string> out;
  for (const auto& e : v.elements) out.push_back(e.str);
  return out;
}

}  // namespace ojs::broker
