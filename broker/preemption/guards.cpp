// PUSH hooks, reservations and capacity holds as FETCH predicates, and the
// preempt directives of heartbeat and FETCH replies.
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>

#include "broker/preemption/preemption.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/storage_uri.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

constexpr double kBand = 1099511627776.0;  // 2^40, as in rank_base()

std::string sha256_hex16(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < 8 && i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

ml::Refusal refusal(const std::string& predicate, const std::string& reason, const std::string& summary) {
  ml::Refusal r;
  r.predicate = predicate;
  r.reason = reason;
  r.summary = summary;
  return r;
}

// Adds a phantom job holding `gpus` GPUs (the given devices first, then free
// ones from the highest index) to a hypothetical load.
void add_phantom(ml::WorkerLoad& load, const ml::Capabilities& caps, const std::string& name, int gpus,
                 const std::vector<int>& devices) {
  if (gpus <= 0) return;
  load.active.push_back({name, gpus, {}});
  int taken = 0;
  for (int d : devices)
    if (taken < gpus && load.busy_devices.insert(d).second) ++taken;
  for (auto it = caps.devices.rbegin(); it != caps.devices.rend() && taken < gpus; ++it)
    if (load.busy_devices.insert(it->index).second) ++taken;
}

bool has_active(const ml::WorkerLoad& load, const std::string& id) {
  return std::any_of(load.active.begin(), load.active.end(), [&](const ml::ActiveJob& a) { return a.job_id == id; });
}

}  // namespace

int class_rank_of_score(double score) {
  const auto band = static_cast<long long>(std::floor(score / kBand));
  return 2 - static_cast<int>(band / 201);
}

// ---- reservations ----

bool Reservation::contains(const std::string& worker_id, const ml::Capabilities* caps) const {
  if (std::find(worker_ids.begin(), worker_ids.end(), worker_id) != worker_ids.end()) return true;
  if (labels.empty() || !caps) return false;
  for (const auto& [k, v] : labels) {
    auto it = caps->labels.find(k);
    if (it == caps->labels.end() || it->second != v) return false;
  }
  return true;
}

json Reservation::to_json() const {
  return {{"id", id},       {"worker_ids", worker_ids}, {"labels", labels},
          {"gpus", gpus},   {"expires_at", format_rfc3339(expires_at_ms)}, {"created_at", format_rfc3339(created_at_ms)}};
}

Reservation Reservation::parse(const json& body, std::int64_t now) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  Reservation r;
  r.created_at_ms = now;
  if (!body.contains("id") || !body["id"].is_string() || body["id"].get<std::string>().empty() ||
      body["id"].get<std::string>().size() > 200)
    throw invalid_field("id", "is required: a non-empty string of at most 200 characters");
  r.id = body["id"].get<std::string>();
  if (body.contains("worker_ids")) {
    if (!body["worker_ids"].is_array()) throw invalid_field("worker_ids", "must be an array of worker ids");
    for (const auto& w : body["worker_ids"]) {
      r.worker_ids.push_back(require_worker_id(w, "worker_ids"));
    }
  }
  if (body.contains("labels")) {
    if (!body["labels"].is_object()) throw invalid_field("labels", "must be an object of label values");
    for (auto it = body["labels"].begin(); it != body["labels"].end(); ++it) {
      if (!it.value().is_string()) throw invalid_field("labels." + it.key(), "must be a string");
      r.labels[it.key()] = it.value().get<std::string>();
    }
  }
  if (r.worker_ids.empty() && r.labels.empty()) throw invalid_field("worker_ids", "worker_ids or labels must select at least one worker");
  if (body.contains("gpus")) {
    if (!body["gpus"].is_number_integer() || body["gpus"].get<long long>() < 0 || body["gpus"].get<long long>() > 1024)
      throw invalid_field("gpus", "must be an integer between 0 (all of the worker's GPUs) and 1024");
    r.gpus = body["gpus"].get<int>();
  }
  if (body.contains("expires_at")) {
    auto ms = body["expires_at"].is_string() ? parse_rfc3339(body["expires_at"].get<std::string>()) : std::nullopt;
    if (!ms) throw invalid_field("expires_at", "must be an RFC 3339 timestamp");
    if (*ms <= now) throw invalid_field("expires_at", "must be in the future");
    r.expires_at_ms = *ms;
  } else if (body.contains("ttl_s")) {
    // Bounded so now + ttl cannot overflow into the past.
    if (!body["ttl_s"].is_number_integer() || body["ttl_s"].get<long long>() < 1 || body["ttl_s"].get<long long>() > kMaxDurationMs / 1000)
      throw invalid_field("ttl_s", "must be an integer between 1 and " + std::to_string(kMaxDurationMs / 1000) + " (100 years)");
    r.expires_at_ms = now + body["ttl_s"].get<long long>() * 1000;
  } else {
    throw invalid_field("expires_at", "is required (or ttl_s)");
  }
  return r;
}

std::map<std::string, Reservation> load_reservations(RedisPool& redis) {
  std::map<std::string, Reservation> out;
  auto v = redis.command({"HGETALL", preemption_keys::reservations});
  for (std::size_t i = 0; i + 1 < v.elements.size(); i += 2) {
    auto j = json::parse(v.elements[i + 1].str, nullptr, false);
    if (!j.is_object()) continue;
    Reservation r;
    r.id = v.elements[i].str;
    r.worker_ids = j.value("worker_ids", std::vector<std::string>{});
    r.labels = j.value("labels", ml::Labels{});
    r.gpus = j.value("gpus", 0);
    r.expires_at_ms = parse_rfc3339(j.value("expires_at", "")).value_or(0);
    r.created_at_ms = parse_rfc3339(j.value("created_at", "")).value_or(0);
    out.emplace(r.id, std::move(r));
  }
  return out;
}

// ---- capacity holds ----

json CapacityHold::to_json() const {
  json v = json::array();
  for (const auto& victim : victims) v.push_back({{"job_id", victim.job_id}, {"gpus", victim.gpus}, {"devices", victim.devices}});
  return {{"for_job", for_job}, {"queue", queue}, {"class", class_id}, {"class_rank", class_rank}, {"victims", v}, {"until_ms", until_ms}};
}

std::optional<CapacityHold> CapacityHold::parse(const std::string& worker_id, const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  CapacityHold h;
  h.worker_id = worker_id;
  h.for_job = j.value("for_job", "");
  h.queue = j.value("queue", "");
  h.class_id = j.value("class", "");
  h.class_rank = j.value("class_rank", 0);
  h.until_ms = j.value("until_ms", std::int64_t{0});
  for (const auto& v : j.value("victims", json::array())) {
    RunningJob r;
    r.job_id = v.value("job_id", "");
    r.gpus = v.value("gpus", 0);
    r.devices = v.value("devices", std::vector<int>{});
    h.victims.push_back(std::move(r));
  }
  return h;
}

// ---- PUSH ----

void bind_reservation(JobClassification& cls) {
  const auto& id = cls.requirements.scheduling.reservation_id;
  if (id.empty()) return;
  json canonical = json::parse(cls.class_json);
  canonical["ext_ml_reservation_id"] = id;
  cls.class_json = canonical.dump();
  cls.class_id = "r" + sha256_hex16(cls.class_json);
}

void check_checkpoint_prefix(const ml::Requirements& req, const std::vector<std::string>& prefixes) {
  const auto& uri = req.scheduling.checkpoint.storage_uri;
  if (uri.empty() || prefixes.empty()) return;
  if (ml::storage_uri_allowed(uri, prefixes)) return;  // normalised first: no "s3:/", "..", "//" tricks
  std::string list;
  for (const auto& p : prefixes) list += (list.empty() ? "" : ", ") + p;
  throw invalid_field("ext_ml_checkpoint_storage_uri", "must start with an allowed checkpoint prefix (" + list + ")");
}

void index_scheduling(RedisPool& redis, const std::string& queue, const std::string& id, const ml::Requirements& req) {
  const auto& s = req.scheduling;
  std::vector<std::vector<std::string>> cmds;
  const auto now = now_ms();
  if (s.priority_escalation && s.escalation_after_s)
    cmds.push_back({"ZADD", preemption_keys::escalations(queue), std::to_string(now + *s.escalation_after_s * 1000LL), id});
  if (!s.reservation_id.empty() && s.reservation_timeout_s)
    cmds.push_back({"ZADD", preemption_keys::reservation_waits(queue), std::to_string(now + *s.reservation_timeout_s * 1000LL), id});
  if (!cmds.empty()) redis.pipeline(cmds);
}

// ---- FETCH ----

void apply_capacity_guards(RedisPool& redis, const Scheduler& scheduler, const std::string& queue, const ClassSet& classes,
                           const WorkerView& worker, std::vector<ClassVerdict>& verdicts,
                           const ml::AssignmentOptions& assignment) {
  auto replies = redis.pipeline({{"HGET", preemption_keys::holds, worker.worker_id}, {"EXISTS", preemption_keys::reservations}});
  const auto now = now_ms();
  std::optional<CapacityHold> hold;
  if (!replies[0].is_nil()) hold = CapacityHold::parse(worker.worker_id, replies[0].str);
  if (hold && hold->until_ms <= now) hold.reset();
  if (hold) {  // void once the preemptor is no longer waiting (claimed, cancelled)
    auto state = redis.command({"HGET", keys::job(hold->queue, hold->for_job), "state"});
    if (state.is_nil() || state.str != "available") hold.reset();
  }
  std::map<std::string, Reservation> reservations;
  if (replies[1].integer == 1) reservations = load_reservations(redis);
  if (!hold && reservations.empty()) return;
  const ml::Capabilities* caps = worker.capabilities ? &*worker.capabilities : nullptr;

  for (auto& v : verdicts) {
    auto cit = classes.classes.find(v.class_id);
    if (cit == classes.classes.end()) continue;
    const ml::Requirements& req = scheduler.requirements(v.class_id, cit->second);
    const auto& named = req.scheduling.reservation_id;
    if (!named.empty()) {
      auto it = reservations.find(named);
      if (it == reservations.end() || !it->second.active(now))
        v.judgement.refusals.push_back(refusal("reservation", "job needs reservation " + named + ", which does not exist or has expired",
                                               "wait for reservation " + named + " (missing or expired)"));
      else if (!it->second.contains(worker.worker_id, caps))
        v.judgement.refusals.push_back(refusal("reservation", "is outside reservation " + named + ", which the job needs",
                                               "are outside reservation " + named));
      if (!v.judgement.eligible()) continue;
    }
    if (!v.judgement.eligible() || !caps || req.gpu_count() == 0) continue;

    // Hypothetical load: what runs now plus capacity held for others.
    ml::WorkerLoad load = worker.load;
    std::string held_for;
    std::string predicate;
    if (hold && !(hold->queue == queue && hold->class_id == v.class_id)) {
      for (const auto& victim : hold->victims)
        if (!has_active(load, victim.job_id)) add_phantom(load, *caps, "hold:" + hold->for_job, victim.gpus, victim.devices);
      held_for = "GPUs freed by preemption are held for job " + hold->for_job + " until " + format_rfc3339(hold->until_ms);
      predicate = "capacity_hold";
    }
    for (const auto& [rid, r] : reservations) {
      if (rid == named || !r.active(now) || !r.contains(worker.worker_id, caps)) continue;
      int held = r.gpus > 0 ? r.gpus : caps->gpu.count;
      for (const auto& a : worker.load.active) {
        auto l = a.labels.find("reservation_id");
        if (l != a.labels.end() && l->second == rid) held -= a.gpus;
      }
      if (held <= 0) continue;
      add_phantom(load, *caps, "reservation:" + rid, held, {});
      held_for += std::string(held_for.empty() ? "" : "; ") + std::to_string(held) + " GPU(s) are held by reservation " + rid;
      if (predicate.empty()) predicate = "reservation";
    }
    if (held_for.empty()) continue;
    ml::Judgement j = ml::judge_dynamic(req, caps, load, assignment);
    if (j.eligible()) {
      v.judgement.devices = j.devices;
      v.claim.devices_json = j.devices.empty() ? std::string() : json(j.devices).dump();
      continue;
    }
    const std::string base = j.refusals.empty() ? std::string() : j.refusals.front().reason + ": ";
    v.judgement.refusals.push_back(refusal(predicate, base + held_for,
                                           predicate == "capacity_hold" ? "hold freed GPUs for a preempting higher-class job"
                                                                        : "hold GPUs for a reservation"));
  }
}

// ---- directives ----

json preemption_directives(RedisPool& redis, WorkerRegistry& workers, const std::string& worker_id) {
  json out = json::array();
  const auto held = workers.held_jobs(worker_id);
  if (held.empty()) return out;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& h : held)
    cmds.push_back({"HMGET", keys::job(h.queue, h.job_id), "state", "worker_id", "preempt_deadline", "preempt_checkpoint",
                    "preempted_for"});
  auto replies = redis.pipeline(cmds);
  const auto now = now_ms();
  for (std::size_t i = 0; i < held.size(); ++i) {
    const auto& f = replies[i].elements;
    if (f.size() != 5 || f[0].str != "active" || f[1].str != worker_id || f[2].is_nil()) continue;
    const auto deadline = std::stoll(f[2].str);
    const auto remaining_s = std::max<std::int64_t>(0, (deadline - now + 999) / 1000);
    out.push_back({{"job_id", held[i].job_id},
                   {"action", "preempt"},
                   {"grace_period_s", remaining_s},
                   {"checkpoint", f[3].str == "1"},
                   {"deadline", format_rfc3339(deadline)},
                   {"preempted_for", f[4].str}});
  }
  return out;
}

}  // namespace ojs::broker
