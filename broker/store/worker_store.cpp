#include "broker/store/worker_store.hpp"

#include <algorithm>
#include <stdexcept>

#include "broker/store/job_record.hpp"
#include "broker/store/keys.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {
const std::string& kWorkers = keys::workers;
std::string worker_key(const std::string& id) { return keys::worker(id); }

// Per held job: whether the worker still holds it and what it weighs there
// (JobRecord::load_on), and the preemption directive on it.
// The document's id, queue and type are the fields' (JobRecord::stored_document):
// anti-affinity on a running job's type reads it.
const std::vector<std::string> kHeldFields{"id",           "queue",         "type",           "state",          "worker_id",
                                           "gang_workers", "gang_members",  "charged_gpus",   "gpus",
                                           "ext_ml_assigned_devices",       "doc",            "preempt_deadline",
                                           "preempt_checkpoint",            "preempted_for",  "stop_action",
                                           "gang_leaving"};

// The preempt directive for this worker's member of an elastic gang told to leave
// (gang_leave.lua writes gang_leaving): only that member stops, the gang runs on.
std::optional<PreemptionMarkView> leave_mark_of(const JobRecord& job, const std::string& worker_id) {
  if (!job.has("gang_leaving")) return std::nullopt;
  const auto leaving = nlohmann::json::parse(job.get("gang_leaving"), nullptr, false);
  if (!leaving.is_object() || !leaving.contains(worker_id) || !leaving[worker_id].is_object()) return std::nullopt;
  const auto& m = leaving[worker_id];
  PreemptionMarkView v;
  v.deadline_ms = m.value("deadline_ms", std::int64_t{0});
  v.checkpoint = m.value("checkpoint", false);
  v.preempted_for = m.value("preempted_for", std::string());
  return v;
}

// A job as HMGET of kHeldFields answered it (nil: absent).
JobRecord held_job(const std::vector<RedisValue>& values) { return JobRecord::from_fields(kHeldFields, values); }

// The read of the worker's held set in one queue: its ids, or (with_jobs) its ids
// with their jobs' fields (held_jobs.lua: no round trip between the two).
std::vector<std::string> held_read(const std::string& worker_id, const std::string& queue, bool with_jobs) {
  if (!with_jobs) return {"SMEMBERS", keys::held(queue, worker_id)};
  return RedisPool::script_call("held_jobs", {keys::held(queue, worker_id), keys::job_prefix(queue)}, kHeldFields);
}

// Device indices of a SMEMBERS reply, ascending.
std::vector<int> device_indices(const RedisValue& members) {
  std::vector<int> out;
  for (const auto& m : members.elements) {
    try {
      out.push_back(std::stoi(m.str));
    } catch (const std::exception&) {  // only set_device_drained writes there
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

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
    } else if (k.rfind("q:", 0) == 0) w.fetched_queues.push_back(k.substr(2));
    else if (k == "hostname") w.hostname = val;
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
    // Every queue it ever fetched from, as fields q:<name> -> last named (ms): the
    // admin listing's `queues` (bounded by --max-queues; dropped with the hash).
    const auto named = nlohmann::json::parse(*queues_json, nullptr, false);
    if (named.is_array())
      for (const auto& q : named)
        if (q.is_string()) {
          hset.push_back("q:" + q.get<std::string>());
          hset.push_back(now);
        }
  }
  return hset;
}
}  // namespace

WorkerStore::Contact WorkerStore::contact(const std::string& worker_id, const std::string* capabilities_json,
                                          const std::string* queues_json, const std::vector<std::string>& claim_queues,
                                          const std::vector<std::string>& known_queues,
                                          std::vector<std::vector<std::string>> riders) {
  const auto now = std::to_string(now_ms());
  std::vector<std::string> read_queues = known_queues, register_queues;
  for (const auto& q : claim_queues)
    if (std::find(known_queues.begin(), known_queues.end(), q) == known_queues.end()) {
      register_queues.push_back(q);
      read_queues.push_back(q);
    }
  std::vector<std::vector<std::string>> cmds{touch_command(worker_id, capabilities_json, queues_json, now),
                                             {"ZADD", kWorkers, now, worker_id},
                                             {"HMGET", worker_key(worker_id), "state", "terminated_by"},
                                             {"SMEMBERS", keys::worker_drained(worker_id)}};
  if (!register_queues.empty()) {  // before any claim there can list a job in the queue's held set
    std::vector<std::string> sadd{"SADD", keys::worker_queues(worker_id)};
    sadd.insert(sadd.end(), register_queues.begin(), register_queues.end());
    cmds.push_back(std::move(sadd));
  }
  const std::size_t guards_at = cmds.size();
  for (auto& read : guard_mark_reads(worker_id)) cmds.push_back(std::move(read));
  const std::size_t held_at = cmds.size();
  append_held_reads(worker_id, read_queues, true, cmds);
  const std::size_t riders_at = cmds.size();
  for (auto& r : riders) cmds.push_back(std::move(r));
  auto replies = redis_.pipeline(cmds);

  Contact c;
  c.rider_replies.assign(std::make_move_iterator(replies.begin() + static_cast<std::ptrdiff_t>(riders_at)),
                         std::make_move_iterator(replies.end()));
  replies.resize(riders_at);
  const auto& directive = replies[2].elements;
  c.state = directive.empty() || directive[0].is_nil() ? "running" : directive[0].str;
  if (directive.size() > 1 && !directive[1].is_nil()) c.terminated_by = directive[1].str;
  c.drained_devices = device_indices(replies[3]);
  c.guards = guard_marks_from(replies[guards_at], replies[guards_at + 1]);
  HeldRead read = held_from(worker_id, read_queues, true, replies, held_at);
  c.queues = std::move(read.listed);
  // A queue this FETCH names must be listed before it claims there (the list may
  // have been dropped since the caller last saw it: the worker was forgotten).
  std::vector<std::string> unlisted{"SADD", keys::worker_queues(worker_id)};
  for (const auto& q : claim_queues)
    if (std::find(c.queues.begin(), c.queues.end(), q) == c.queues.end()) unlisted.push_back(q);
  if (unlisted.size() > 2) {
    redis_.command(unlisted);
    c.queues.insert(c.queues.end(), unlisted.begin() + 2, unlisted.end());
  }
  c.held = verify(worker_id, std::move(read));
  return c;
}

bool WorkerStore::set_state(const std::string& worker_id, const std::string& state) {
  return redis_.eval("set_worker_state", {kWorkers, worker_key(worker_id)}, {worker_id, state}).integer == 1;
}

std::string WorkerStore::deliver_directive(const std::string& worker_id, const std::string& incarnation, bool idle) {
  return redis_.eval("deliver_directive", {worker_key(worker_id)}, {incarnation, idle ? "1" : "0"}).str;
}

void WorkerStore::set_hostname(const std::string& worker_id, const std::string& hostname) {
  redis_.command({"HSET", worker_key(worker_id), "hostname", hostname});
}

std::vector<int> WorkerStore::set_device_drained(const std::string& worker_id, int index, bool drained) {
  const auto key = keys::worker_drained(worker_id);
  const auto replies = redis_.pipeline({{drained ? "SADD" : "SREM", key, std::to_string(index)}, {"SMEMBERS", key}});
  return device_indices(replies[1]);
}

std::optional<WorkerInfo> WorkerStore::get(const std::string& worker_id) {
  auto replies = redis_.pipeline({{"HGETALL", worker_key(worker_id)}, {"SMEMBERS", keys::worker_drained(worker_id)}});
  if (replies[0].elements.empty()) return std::nullopt;
  WorkerInfo w = from_hash(worker_id, replies[0]);
  w.drained_devices = device_indices(replies[1]);
  return w;
}

std::vector<WorkerInfo> WorkerStore::list() {
  auto ids = redis_.command({"ZRANGE", kWorkers, "0", "-1"});
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids.elements) {
    cmds.push_back({"HGETALL", worker_key(id.str)});
    cmds.push_back({"SMEMBERS", keys::worker_drained(id.str)});
  }
  std::vector<WorkerInfo> out;
  if (cmds.empty()) return out;
  auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i + 1 < replies.size(); i += 2) {
    out.push_back(from_hash(ids.elements[i / 2].str, replies[i]));
    out.back().drained_devices = device_indices(replies[i + 1]);
  }
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
  return redis_.eval("prune_worker", {kWorkers, worker_key(worker_id), keys::worker_queues(worker_id), keys::worker_drained(worker_id)},
                     {worker_id, std::to_string(silent_since_ms)}).integer == 1;
}

std::vector<WorkerStore::HeldEntry> WorkerStore::held_ids(const std::string& worker_id, const std::vector<std::string>& known_queues) {
  HeldRead read = read_entries(worker_id, known_queues, false);
  read.entries.insert(read.entries.end(), read.legacy.begin(), read.legacy.end());
  return read.entries;
}

HeldState WorkerStore::held_state(const std::string& worker_id, const std::vector<std::string>& known_queues) {
  return verify(worker_id, read_entries(worker_id, known_queues, true));
}

WorkerStore::HeldRead WorkerStore::read_entries(const std::string& worker_id, const std::vector<std::string>& known_queues,
                                                bool with_jobs) {
  std::vector<std::vector<std::string>> cmds;
  append_held_reads(worker_id, known_queues, with_jobs, cmds);
  return held_from(worker_id, known_queues, with_jobs, redis_.pipeline(cmds), 0);
}

void WorkerStore::append_held_reads(const std::string& worker_id, const std::vector<std::string>& queues, bool with_jobs,
                                    std::vector<std::vector<std::string>>& cmds) {
  cmds.push_back({"SMEMBERS", keys::worker_queues(worker_id)});
  cmds.push_back({"HGETALL", keys::legacy_worker_jobs(worker_id)});
  for (const auto& q : queues) cmds.push_back(held_read(worker_id, q, with_jobs));
}

WorkerStore::HeldRead WorkerStore::held_from(const std::string& worker_id, const std::vector<std::string>& queues, bool with_jobs,
                                             const std::vector<RedisValue>& replies, std::size_t first) {
  HeldRead read;
  for (const auto& q : replies[first].elements) read.listed.push_back(q.str);
  // Claim records an older broker wrote (keys.hpp legacy_worker_jobs): job id -> {queue, ...}.
  const auto& legacy = replies[first + 1].elements;
  for (std::size_t i = 0; i + 1 < legacy.size(); i += 2) {
    const auto record = nlohmann::json::parse(legacy[i + 1].str, nullptr, false);
    const std::string queue = record.is_object() ? record.value("queue", "") : "";
    if (!queue.empty()) read.legacy.push_back({queue, legacy[i].str});
  }
  // One queue's held set: ids, or (with_jobs) held_jobs.lua's {id, {fields}, ...}.
  const auto take = [&](const std::string& queue, const RedisValue& reply) {
    if (reply.is_error()) throw std::runtime_error("reading what worker " + worker_id + " holds in " + queue + " failed: " + reply.str);
    const std::size_t step = with_jobs ? 2 : 1;
    for (std::size_t i = 0; i + step <= reply.elements.size(); i += step) {
      read.entries.push_back({queue, reply.elements[i].str});
      if (with_jobs) read.jobs.push_back(held_job(reply.elements[i + 1].elements));
    }
  };
  for (std::size_t i = 0; i < queues.size(); ++i) take(queues[i], replies[first + 2 + i]);
  // Listed queues the caller did not know of (another broker added them): one more round trip.
  std::vector<std::vector<std::string>> more;
  std::vector<std::string> unread;
  for (const auto& q : read.listed)
    if (std::find(queues.begin(), queues.end(), q) == queues.end()) {
      unread.push_back(q);
      more.push_back(held_read(worker_id, q, with_jobs));
    }
  if (more.empty()) return read;
  const auto sets = redis_.pipeline(more);
  for (std::size_t i = 0; i < unread.size(); ++i) take(unread[i], sets[i]);
  return read;
}

HeldState WorkerStore::verify(const std::string& worker_id, HeldRead read) {
  // The legacy records are verified like the held sets' entries; those still held
  // move into the sets, and the old hash drains. Jobs not read with their entries
  // (the legacy ones) are read here, in one round trip.
  std::vector<HeldEntry>& entries = read.entries;
  std::vector<JobRecord>& jobs = read.jobs;
  const std::size_t legacy_from = entries.size();
  entries.insert(entries.end(), read.legacy.begin(), read.legacy.end());
  HeldState out;
  if (entries.empty()) return out;
  const std::size_t unread_from = jobs.size();
  std::vector<std::vector<std::string>> reads;
  for (std::size_t i = unread_from; i < entries.size(); ++i)
    reads.push_back(JobRecord::read_fields(keys::job(entries[i].queue, entries[i].id), kHeldFields));
  if (!reads.empty())
    for (const auto& reply : redis_.pipeline(reads)) jobs.push_back(held_job(reply.elements));
  std::vector<std::vector<std::string>> fixes;
  std::vector<std::string> drained{"HDEL", keys::legacy_worker_jobs(worker_id)};
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& [queue, id] = entries[i];
    const bool legacy_entry = i >= legacy_from;
    if (legacy_entry) drained.push_back(id);
    const JobRecord& job = jobs[i];
    const auto load = job.load_on(worker_id);
    if (!load) {  // finished, or moved to another worker: the entry heals here
      if (!legacy_entry) fixes.push_back({"SREM", keys::held(queue, worker_id), id});
      continue;
    }
    if (legacy_entry) {
      fixes.push_back({"SADD", keys::worker_queues(worker_id), queue});
      fixes.push_back({"SADD", keys::held(queue, worker_id), id});
    }
    const auto& d = load->demand;
    out.load.active.push_back({id, load->gpus, load->labels, load->anti_affinity, d.gpu_memory_gb, d.cpu_cores, d.memory_gb, d.tpu_chips});
    out.load.hold(load->devices, d.gpu_memory_gb);
    if (job.has("gang_workers")) out.gang_jobs.push_back(id);
    if (job.state() == "cancelled")  // cancelled or killed while it ran: told until the worker reports the process gone
      out.preempting.push_back({id, 0, false, {}, job.get("stop_action"), queue});
    else if (const auto deadline = job.get_int("preempt_deadline"))
      out.preempting.push_back({id, *deadline, job.get("preempt_checkpoint") == "1", job.get("preempted_for"), "preempt", queue});
    else if (auto leave = leave_mark_of(job, worker_id))
      out.preempting.push_back({id, leave->deadline_ms, leave->checkpoint, leave->preempted_for, "preempt", queue, true});
  }
  if (drained.size() > 2) fixes.push_back(std::move(drained));
  if (!fixes.empty()) redis_.pipeline(fixes);
  return out;
}

}  // namespace ojs::broker
