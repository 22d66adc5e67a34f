#include "broker/store/worker_store.hpp"

#include <algorithm>

#include "broker/store/keys.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {
const std::string& kWorkers = keys::workers;
std::string worker_key(const std::string& id) { return keys::worker(id); }
std::string worker_jobs_key(const std::string& id) { return keys::worker_jobs(id); }

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

// The HSET of a contact: last_seen, and what the worker sent with it (JSON text, nullptr = unchanged).
std::vector<std::string> touch_command(const std::string& worker_id, const std::string* capabilities_json,
                                       const std::string* queues_json, const std::string& now) {
  std::vector<std::string> hset{"HSET", worker_key(worker_id), "last_seen", now};
  if (capabilities_json) {
    hset.push_back("capabilities");
    hset.push_back(*capabilities_json);
  }
  if (queues_json) {
    hset.push_back("queues");
    hset.push_back(*queues_json);
  }
  return hset;
}
}  // namespace

WorkerStore::Contact WorkerStore::contact(const std::string& worker_id, const std::string* capabilities_json,
                                          const std::string* queues_json) {
  const auto now = std::to_string(now_ms());
  std::vector<std::vector<std::string>> cmds{touch_command(worker_id, capabilities_json, queues_json, now),
                                             {"ZADD", kWorkers, now, worker_id},
                                             {"HGET", worker_key(worker_id), "state"},
                                             {"HGETALL", worker_jobs_key(worker_id)}};
  for (auto& read : guard_mark_reads(worker_id)) cmds.push_back(std::move(read));
  auto replies = redis_.pipeline(cmds);
  Contact c;
  c.state = replies[2].is_nil() ? "running" : replies[2].str;
  c.guards = guard_marks_from(replies[4], replies[5]);
  c.held = verify(worker_id, replies[3]);
  return c;
}

void WorkerStore::set_state(const std::string& worker_id, const std::string& state) {
  // Listed from now on (NX: a known worker keeps its last contact), so the
  // registry's retention window starts now, not at the epoch.
  redis_.pipeline({{"HSET", worker_key(worker_id), "state", state}, {"ZADD", kWorkers, "NX", std::to_string(now_ms()), worker_id}});
}

std::optional<WorkerInfo> WorkerStore::get(const std::string& worker_id) {
  auto v = redis_.command({"HGETALL", worker_key(worker_id)});
  if (v.elements.empty()) return std::nullopt;
  return from_hash(worker_id, v);
}

std::vector<WorkerInfo> WorkerStore::list() {
  auto ids = redis_.command({"ZRANGE", kWorkers, "0", "-1"});
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids.elements) cmds.push_back({"HGETALL", worker_key(id.str)});
  std::vector<WorkerInfo> out;
  if (cmds.empty()) return out;
  auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i < replies.size(); ++i) out.push_back(from_hash(ids.elements[i].str, replies[i]));
  return out;
}

std::vector<std::string> WorkerStore::silent_since(std::int64_t older_than_ms, int limit) {
  std::vector<std::string> cmd{"ZRANGEBYSCORE", kWorkers, "-inf", std::to_string(older_than_ms)};
  if (limit > 0) cmd.insert(cmd.end(), {"LIMIT", "0", std::to_string(limit)});
  auto v = redis_.command(cmd);
  std::vector<std::string> out;
  for (const auto& e : v.elements) out.push_back(e.str);
  return out;
}

bool WorkerStore::prune(const std::string& worker_id, std::int64_t silent_since_ms) {
  return redis_.eval("prune_worker", {kWorkers, worker_key(worker_id), worker_jobs_key(worker_id)},
                     {worker_id, std::to_string(silent_since_ms)}).integer == 1;
}

void WorkerStore::record_claim(const std::string& worker_id, const std::string& job_id, const nlohmann::json& entry) {
  redis_.command({"HSET", worker_jobs_key(worker_id), job_id, entry.dump()});
}

std::vector<HeldJob> WorkerStore::held_jobs(const std::string& worker_id) {
  std::vector<HeldJob> out;
  auto entries = redis_.command({"HGETALL", worker_jobs_key(worker_id)});
  for (std::size_t i = 0; i + 1 < entries.elements.size(); i += 2) {
    auto entry = nlohmann::json::parse(entries.elements[i + 1].str, nullptr, false);
    if (!entry.is_object()) continue;
    HeldJob job;
    job.job_id = entries.elements[i].str;
    job.queue = entry.value("queue", "");
    job.gpus = entry.value("gpus", 0);
    if (entry.contains("devices") && entry["devices"].is_array()) job.devices = entry["devices"].get<std::vector<int>>();
    if (entry.contains("labels") && entry["labels"].is_object())
      for (auto it = entry["labels"].begin(); it != entry["labels"].end(); ++it)
        if (it.value().is_string()) job.labels[it.key()] = it.value().get<std::string>();
    out.push_back(std::move(job));
  }
  return out;
}

HeldState WorkerStore::held_state(const std::string& worker_id) {
  return verify(worker_id, redis_.command({"HGETALL", worker_jobs_key(worker_id)}));
}

// [gangs] A gang member holds its GPUs while the gang forms (available) and runs (active).
static bool gang_member(const std::string& state, const RedisValue& gang_workers, const std::string& worker_id) {
  if (gang_workers.is_nil() || (state != "active" && state != "available")) return false;
  const auto workers = nlohmann::json::parse(gang_workers.str, nullptr, false);
  return workers.is_array() && std::find(workers.begin(), workers.end(), worker_id) != workers.end();
}

HeldState WorkerStore::verify(const std::string& worker_id, const RedisValue& entries) {
  HeldState out;
  ml::WorkerLoad& load = out.load;
  if (entries.elements.empty()) return out;
  std::vector<std::pair<std::string, nlohmann::json>> listed;
  std::vector<std::vector<std::string>> checks;
  for (std::size_t i = 0; i + 1 < entries.elements.size(); i += 2) {
    auto entry = nlohmann::json::parse(entries.elements[i + 1].str, nullptr, false);
    if (!entry.is_object()) continue;
    const auto& id = entries.elements[i].str;
    // One read per job serves the load (state, holder) and the preemption directive.
    checks.push_back({"HMGET", keys::job(entry.value("queue", ""), id), "state", "worker_id", "preempt_deadline",
                      "preempt_checkpoint", "preempted_for", "gang_workers"});
    listed.emplace_back(id, std::move(entry));
  }
  if (checks.empty()) return out;
  auto states = redis_.pipeline(checks);
  std::vector<std::string> gone{"HDEL", worker_jobs_key(worker_id)};
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const auto& f = states[i].elements;
    const bool held = f.size() == 6 && ((f[0].str == "active" && f[1].str == worker_id) || gang_member(f[0].str, f[5], worker_id));
    const auto& [id, entry] = listed[i];
    if (!held) {
      gone.push_back(id);
      continue;
    }
    ml::ActiveJob job;
    job.job_id = id;
    job.gpus = entry.value("gpus", 0);
    if (entry.contains("labels") && entry["labels"].is_object())
      for (auto it = entry["labels"].begin(); it != entry["labels"].end(); ++it)
        if (it.value().is_string()) job.labels[it.key()] = it.value().get<std::string>();
    if (entry.contains("devices") && entry["devices"].is_array()) load.hold(entry["devices"].get<std::vector<int>>());
    load.active.push_back(std::move(job));
    if (!f[2].is_nil()) {
      try {
        out.preempting.push_back({id, std::stoll(f[2].str), f[3].str == "1", f[4].str});
      } catch (const std::exception&) {
      }
    }
  }
  if (gone.size() > 2) redis_.command(gone);
  return out;
}

}  // namespace ojs::broker
