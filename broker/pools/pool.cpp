#include "broker/pools/pool.hpp"

#include <algorithm>

#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker::pools {

using nlohmann::json;

namespace {

constexpr const char* kQueueRule = "each queue name must match ^[a-z0-9][a-z0-9.-]*$";

long long positive_integer(const json& v, const std::string& field) {
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1000000)
    throw invalid_field(field, "must be an integer between 1 and 1000000");
  return v.get<long long>();
}

void add_queue(Pool& pool, const std::string& queue) {
  if (!is_valid_queue_name(queue)) throw invalid_field("queues", kQueueRule);
  if (std::find(pool.queues.begin(), pool.queues.end(), queue) != pool.queues.end())
    throw invalid_field("queues", "names queue " + queue + " twice");
  pool.queues.push_back(queue);
}

// {q: {weight: n}}: the public suite's form, weights inside.
void parse_queue_object(Pool& pool, const json& queues) {
  for (const auto& [queue, entry] : queues.items()) {
    add_queue(pool, queue);
    if (!entry.is_object()) throw invalid_field("queues." + queue, "must be an object, e.g. {\"weight\": 1}");
    for (const auto& [key, _] : entry.items())
      if (key != "weight") throw invalid_field("queues." + queue + "." + key, "is not a pool queue field (weight)");
    if (entry.contains("weight")) pool.weights[queue] = positive_integer(entry["weight"], "queues." + queue + ".weight");
  }
}

}  // namespace

long long Pool::weight_of(const std::string& queue) const {
  const auto it = weights.find(queue);
  return it == weights.end() ? 1 : it->second;
}

void require_pool_name(const std::string& name) {
  if (!is_valid_queue_name(name)) throw invalid_field("name", "must match ^[a-z0-9][a-z0-9.-]*$ (at most 128 characters)");
}

Pool parse_pool(const std::string& name, const json& body) {
  require_pool_name(name);
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  static const char* const kFields[] = {"name", "queues", "weights", "strategy", "concurrency"};
  for (const auto& [key, _] : body.items())
    if (std::find_if(std::begin(kFields), std::end(kFields), [&](const char* f) { return key == f; }) == std::end(kFields))
      throw invalid_field(key, "is not a pool field (name, queues, weights, strategy, concurrency)");
  Pool pool;
  pool.name = name;
  if (body.contains("name") && (!body["name"].is_string() || body["name"].get<std::string>() != name))
    throw invalid_field("name", "must equal the pool name in the path (" + name + ")");
  if (!body.contains("queues")) throw invalid_field("queues", "is required: the pool's queues, an array of queue names");
  const auto& queues = body["queues"];
  if (queues.is_array()) {
    for (const auto& q : queues) {
      if (!q.is_string()) throw invalid_field("queues", kQueueRule);
      add_queue(pool, q.get<std::string>());
    }
  } else if (queues.is_object()) {
    if (body.contains("weights")) throw invalid_field("weights", "must be left out when queues is an object (its weights are queues.<name>.weight)");
    parse_queue_object(pool, queues);
  } else {
    throw invalid_field("queues", "must be an array of queue names or an object {queue: {weight}}");
  }
  if (pool.queues.empty()) throw invalid_field("queues", "must name at least one queue");
  if (pool.queues.size() > kMaxQueuesPerPool)
    throw invalid_field("queues", "must name at most " + std::to_string(kMaxQueuesPerPool) + " queues");
  if (body.contains("weights")) {
    if (!body["weights"].is_object()) throw invalid_field("weights", "must be an object {queue: positive integer}");
    for (const auto& [queue, w] : body["weights"].items()) {
      if (std::find(pool.queues.begin(), pool.queues.end(), queue) == pool.queues.end())
        throw invalid_field("weights." + queue, "names no queue of the pool");
      pool.weights[queue] = positive_integer(w, "weights." + queue);
    }
  }
  if (body.contains("strategy")) {
    const auto strategy = body["strategy"].is_string() ? parse_pool_strategy(body["strategy"].get<std::string>()) : std::nullopt;
    if (!strategy) throw invalid_field("strategy", "must be one of strict, round-robin, weighted, least-loaded");
    pool.strategy = *strategy;
  }
  if (body.contains("concurrency") && !body["concurrency"].is_null())
    pool.concurrency = positive_integer(body["concurrency"], "concurrency");
  return pool;
}

json to_json(const Pool& pool) {
  json weights = json::object();
  for (const auto& [q, w] : pool.weights) weights[q] = w;
  json out = {{"name", pool.name}, {"queues", pool.queues}, {"weights", weights},
              {"strategy", std::string(to_string(pool.strategy))}, {"created_at", pool.created_at}, {"updated_at", pool.updated_at}};
  out["concurrency"] = pool.concurrency ? json(*pool.concurrency) : json(nullptr);
  return out;
}

Pool pool_from_json(const json& stored) {
  Pool pool;
  pool.name = stored.value("name", "");
  pool.queues = stored.value("queues", std::vector<std::string>{});
  const json weights = stored.value("weights", json::object());
  for (const auto& [q, w] : weights.items()) pool.weights[q] = w.get<long long>();
  pool.strategy = parse_pool_strategy(stored.value("strategy", "round-robin")).value_or(PoolStrategy::round_robin);
  if (stored.contains("concurrency") && stored["concurrency"].is_number_integer()) pool.concurrency = stored["concurrency"].get<long long>();
  pool.created_at = stored.value("created_at", "");
  pool.updated_at = stored.value("updated_at", "");
  return pool;
}

}  // namespace ojs::broker::pools
