// Workers the broker has seen: last contact, advertised capabilities, and the
// lifecycle directive an admin set for them (running, quiet, terminate). The
// records live in the store (broker/store/worker_store.hpp); the registry decides
// what a worker's records mean (its load, whether it may be forgotten).
#pragma once
#include <nlohmann/json.hpp>

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "broker/store/worker_store.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

class WorkerRegistry {
 public:
  explicit WorkerRegistry(WorkerStore& store) : store_(store) {}
  // FETCH and BEAT: records contact and reads what the worker holds, with the jobs
  // it verifies them against, in one round trip (held_jobs.lua). The held sets read are
  // those of the queues it names and of the queue list this broker last read for it
  // (another broker may have added one: then a round trip more). A FETCH's queues
  // join the list before it claims there. A worker sends its capabilities (a few KB) with every
  // FETCH; they are written only when they differ from what this broker last wrote
  // for it, or that was kResendProfileMs ago (another broker, or an admin, may have
  // changed the record since), so an unchanged worker costs Redis a small HSET.
  using Contact = WorkerStore::Contact;
  // capabilities_json: the capabilities as compact JSON text (nullptr: none sent).
  // incarnation: which run of the worker process this is (worker_incarnation in
  // api/heartbeat_request.hpp; "" when it sent nothing to tell). Contact::state is
  // what the worker is told: running, quiet or terminate. A terminate directive
  // ends with the incarnation it reached (a restarted worker runs); drain is quiet
  // while the worker holds a job (by its held sets, or the jobs its heartbeat
  // reports, `reported_jobs`: a worker without capabilities has no held sets), then terminate.
  // A FETCH reports no jobs (nullopt): a worker without capabilities that fetches is
  // told quiet, never terminate, as it may hold a job no held set shows; its next
  // heartbeat, which lists its jobs, ends the drain.
  // riders: reads sent in the contact's pipeline (WorkerStore::contact), answered in
  // Contact::rider_replies.
  Contact contact(const std::string& worker_id, const std::string* capabilities_json, const std::vector<std::string>& queues,
                  const std::string& incarnation, std::optional<std::size_t> reported_jobs = std::nullopt,
                  std::vector<std::vector<std::string>> riders = {});
  static constexpr std::int64_t kResendProfileMs = 30000;
  // Records the hostname a worker sent, written when it differs from what this
  // broker last wrote for it (a worker sends it with every heartbeat).
  void note_hostname(const std::string& worker_id, const std::string& hostname);
  // An admin's directive (running, quiet, terminate, drain); false when the worker is unknown.
  bool set_state(const std::string& worker_id, const std::string& state) { return store_.set_state(worker_id, state); }
  // Per-GPU drain (admin): the worker's drained devices after the change.
  std::vector<int> set_device_drained(const std::string& worker_id, int index, bool drained) {
    return store_.set_device_drained(worker_id, index, drained);
  }
  // Cordon: a running worker whose capabilities show at least this share of its
  // devices unhealthy is set quiet (--cordon-unhealthy-share; 0: never).
  void set_cordon_share(double share) { cordon_share_ = share; }
  std::optional<WorkerInfo> get(const std::string& worker_id) { return store_.get(worker_id); }
  std::vector<WorkerInfo> list() { return store_.list(); }
  std::vector<std::string> stale(std::int64_t older_than_ms) { return store_.silent_since(older_than_ms); }
  // Forgets up to `limit` workers silent since `older_than_ms` that hold no job
  // (their record, capabilities and claim records); returns their ids. Without it
  // every worker id ever seen stays listed and scanned.
  std::vector<std::string> prune(std::int64_t older_than_ms, int limit);
  // One worker, if silent since `silent_since_ms` and holding no job; true when forgotten.
  bool forget(const std::string& worker_id, std::int64_t silent_since_ms);

  // What runs on a worker, for the dynamic half of matching: listed by the claim
  // scripts in the same step as each claim, verified against the jobs themselves at
  // read (entries of jobs that finished or moved to another worker are dropped), so
  // it heals after any crash.
  ml::WorkerLoad load(const std::string& worker_id) { return held_state(worker_id).load; }
  HeldState held_state(const std::string& worker_id) { return store_.held_state(worker_id, known_queues(worker_id)); }
  // The same jobs unverified, {queue, job id}: for the preemption controller, which
  // reads the jobs (JobRecord::load_on: what each weighs on the worker).
  using HeldEntry = WorkerStore::HeldEntry;
  std::vector<HeldEntry> held_ids(const std::string& worker_id) { return store_.held_ids(worker_id, known_queues(worker_id)); }

 private:
  std::vector<std::string> known_queues(const std::string& worker_id);
  // Whether capabilities (JSON text) show the cordon share of devices unhealthy.
  bool calls_for_cordon(const std::string& capabilities_json) const;
  WorkerStore& store_;
  double cordon_share_ = 1.0;
  // worker id -> (hash of the capabilities and queues last written, when): bounded,
  // starts over past kMaxProfiles (a miss only costs one full write).
  struct WrittenProfile {
    std::size_t hash = 0;
    std::int64_t at_ms = 0;
  };
  static constexpr std::size_t kMaxProfiles = 100000;
  std::mutex profiles_mutex_;
  std::unordered_map<std::string, WrittenProfile> profiles_;
  // worker id -> its queue list as this broker last read it (same bound): which held
  // sets the next contact reads in its first round trip, and which queues it need not add.
  std::unordered_map<std::string, std::vector<std::string>> queue_lists_;
  std::unordered_map<std::string, std::string> hostnames_;  // worker id -> hostname last written (same bound)
};

}  // namespace ojs::broker
