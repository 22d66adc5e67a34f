// The worker registry in Redis: contact, capabilities and directive state in the
// global slot (keys.hpp: workers, worker:<id>, worker:<id>:queues), and what each
// worker holds, in the held sets the claim scripts keep beside the jobs (keys.hpp
// held: one per queue and worker). What the records mean (whether a worker may be
// forgotten) is the registry's (workers/worker_registry.hpp).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/guard_marks.hpp"
#include "broker/store/job_record.hpp"
#include "broker/store/redis_client.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

struct WorkerInfo {
  std::string id;
  std::string state = "running";  // running | quiet | terminate | drain (admin: quiet, then terminate once idle)
  std::int64_t last_seen_ms = 0;
  nlohmann::json capabilities;     // null when the worker never sent any
  std::vector<std::string> queues;          // the last FETCH's
  std::vector<std::string> fetched_queues;  // every queue it fetched from
  std::string hostname;                     // as the worker sent it ("" = never)
  std::vector<int> drained_devices;  // by an admin (keys.hpp worker_drained), ascending
};

// A job on the worker that must stop: marked by the preemption controller
// (preempt.lua: action preempt), or cancelled while it ran (cancel.lua: action
// cancel or kill, until the worker reports its process gone).
struct PreemptionMarkView {
  std::string job_id;
  std::int64_t deadline_ms = 0;  // preempt only
  bool checkpoint = false;       // preempt only
  std::string preempted_for;     // preempt only
  std::string action = "preempt";
  std::string queue;   // where the job lives
  bool leave = false;  // this worker's member is told to leave its elastic gang (the gang runs on)
};

// What a worker holds, verified against the jobs: its load for matching and the
// jobs it must give up (preempted, cancelled or killed: the replies' job_directives).
struct HeldState {
  ml::WorkerLoad load;
  std::vector<PreemptionMarkView> preempting;
  std::vector<std::string> gang_jobs;  // the held jobs this worker runs as a gang member
};

class WorkerStore {
 public:
  explicit WorkerStore(RedisPool& redis) : redis_(redis) {}

  // Records contact now and reads, in one pipeline, the directive state, the
  // worker's queue list (keys.hpp worker_queues), FETCH's capacity guards and what
  // it holds in `claim_queues` and `known_queues`: each held set with its jobs'
  // fields (held_jobs.lua), verified here (held sets of other listed queues follow
  // in a second round trip). `claim_queues` (a FETCH's: it may claim there) are
  // on the list when this returns; `known_queues` is the list as the caller last saw
  // it (those need no write). The
  // capabilities and queues (JSON text) are written when given; nullptr leaves the
  // stored ones.
  struct Contact {
    std::string state;
    std::string terminated_by;  // the incarnation a terminate directive reached ("" when none yet)
    HeldState held;
    GuardMarks guards;  // read in the same pipeline: FETCH's capacity guards need no round trip of their own
    std::vector<std::string> queues;  // the worker's queue list as read
    std::vector<int> drained_devices;  // devices an admin drained: no new job goes there
    std::vector<RedisValue> rider_replies;  // the replies to `riders`, in order
  };
  // riders: reads of another store sent in the same pipeline (a FETCH's claim
  // snapshot), so they cost no round trip of their own.
  Contact contact(const std::string& worker_id, const std::string* capabilities_json, const std::string* queues_json,
                  const std::vector<std::string>& claim_queues, const std::vector<std::string>& known_queues,
                  std::vector<std::vector<std::string>> riders = {});
  // The hostname a worker sent (heartbeat or FETCH `hostname`), shown by the admin listing.
  void set_hostname(const std::string& worker_id, const std::string& hostname);
  // set_worker_state.lua: false (and nothing written) when the worker is unknown.
  bool set_state(const std::string& worker_id, const std::string& state);
  // deliver_directive.lua: the state a contact of a terminate or drain worker is told.
  std::string deliver_directive(const std::string& worker_id, const std::string& incarnation, bool idle);
  // Per-GPU drain: adds the device to (or takes it from) the worker's drained set; the
  // set as it is after.
  std::vector<int> set_device_drained(const std::string& worker_id, int index, bool drained);
  std::optional<WorkerInfo> get(const std::string& worker_id);
  std::vector<WorkerInfo> list();
  // Ids silent since older_than_ms (at most `limit`, 0 = all).
  std::vector<std::string> silent_since(std::int64_t older_than_ms, int limit = 0);
  // prune_worker.lua: drops the worker's entry, hash and queue list if still silent
  // since then (its held sets are empty: the caller checked).
  bool prune(const std::string& worker_id, std::int64_t silent_since_ms);

  // What the worker holds, verified against the job hashes: entries of jobs that
  // finished or moved to another worker are dropped (so they heal after any crash).
  // known_queues: the worker's queue list as the caller last saw it (their held sets
  // and jobs are read in the first round trip; others the list names, in a second).
  HeldState held_state(const std::string& worker_id, const std::vector<std::string>& known_queues);
  // The same entries unverified ({queue, job id}), for a caller that reads the jobs
  // anyway (the preemption controller: JobRecord::load_on tells what each weighs).
  struct HeldEntry {
    std::string queue, id;
  };
  std::vector<HeldEntry> held_ids(const std::string& worker_id, const std::vector<std::string>& known_queues);

 private:
  struct HeldRead {
    std::vector<std::string> listed;  // the worker's queue list
    std::vector<HeldEntry> entries;   // its held sets' entries
    std::vector<JobRecord> jobs;      // with_jobs: the fields verify() reads of each entry's job, in order
    std::vector<HeldEntry> legacy;    // the claim records an older broker wrote (keys.hpp legacy_worker_jobs)
  };
  HeldRead read_entries(const std::string& worker_id, const std::vector<std::string>& known_queues, bool with_jobs);
  // The reads of what the worker holds, appended to a pipeline: its queue list, the
  // legacy records, the held sets of `queues` (with_jobs: each with its jobs' fields,
  // held_jobs.lua); held_from parses their replies (from `first` on) and reads the
  // held sets of listed queues not among `queues`.
  static void append_held_reads(const std::string& worker_id, const std::vector<std::string>& queues, bool with_jobs,
                                std::vector<std::vector<std::string>>& cmds);
  HeldRead held_from(const std::string& worker_id, const std::vector<std::string>& queues, bool with_jobs,
                     const std::vector<RedisValue>& replies, std::size_t first);
  HeldState verify(const std::string& worker_id, HeldRead read);
  RedisPool& redis_;
};

}  // namespace ojs::broker
