// The job store: every state transition is one Lua script (see store/lua/);
// this class only marshals arguments and replies. Decisions (retry or discard,
// which classes a worker may take) are made by the caller.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_record.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class PreemptionStore;
class UniqueStore;
class CronStore;
class ProgressStore;
class JobIndexStore;
class StatsHistoryStore;
class UsageStore;

struct EligibleClass {
  std::string id;
  double bonus = 0;                        // soft score: higher is preferred within a priority band
  std::int64_t hold_enqueued_after_ms = 0; // delay scheduling: skip heads enqueued after this (0 = none)
  int gpus = 0;                            // charged to the queue's GPU budget on claim
  std::string devices_json;                // device indices assigned on claim ("" = none)
  long long gpu_memory_mb = 0;             // charged to the queue's GPU-memory budget on claim
  std::int64_t backfill_before_ms = 0;     // [backfill] only jobs declared to end by then (0 = any)
};

// A class the budget kept from being claimed: its jobs stay available.
struct BudgetBlock {
  std::string class_id;
  long long in_use = 0;
  long long limit = 0;
  std::string kind;  // max_total_gpus | max_concurrent_gpu_jobs | max_total_gpu_memory_gb (in_use, limit in MB)
};

struct ClassSet {
  std::string version = "0";
  std::map<std::string, std::string> classes;  // class id -> canonical JSON
};

enum class TransitionStatus { ok, not_found, conflict, stale, extended, duplicate, paused, queue_full };

struct Transition {
  TransitionStatus status = TransitionStatus::ok;
  std::string detail;  // current state on conflict, current attempt on stale, "depth bound strategy" on queue_full
  JobRecord job;
};

// A queue's GPU budget (config) and what is charged against it (ledger): the one
// C++ read of it (claim.lua's budget_block is the one Lua read).
struct BudgetUse {
  std::optional<long long> max_gpus;  // max_total_gpus
  std::optional<long long> max_jobs;  // max_concurrent_gpu_jobs
  std::optional<long long> max_gpu_mem_mb;  // max_total_gpu_memory_gb, in MB
  long long gpus_in_use = 0;
  long long gpu_jobs = 0;
  long long gpu_mem_mb_in_use = 0;
};
// The budget read itself (config limits, then ledger), for callers that send it
// inside a larger pipeline: JobStore::budget and QueueConfigStore::budget.
std::vector<std::vector<std::string>> budget_reads(const std::string& queue);
BudgetUse budget_from(const RedisValue& limits, const RedisValue& ledger);

struct ClaimOutcome {
  TransitionStatus status = TransitionStatus::ok;  // ok, paused or stale
  std::string current_version;
  std::vector<JobRecord> jobs;
  std::vector<BudgetBlock> budget_blocked;
  std::string rate_limited;  // the queue rate limit that cut the claim short: concurrency | rate | ""
};

// [gangs] A gang class a fetching worker may join (claim_gang.lua).
struct GangClass {
  std::string id;
  int gpus = 0;              // per member: charged to the queue's budget while held
  long long gpu_memory_mb = 0;  // per member: charged to a GPU-memory budget (ml::gpu_memory_charge_mb)
  std::string devices_json;  // the member's devices ("" = none)
  std::string label_value;   // the worker's value of the gang's same_label ("" = none)
};

// The worker as a gang member: where its rank 0 peers would meet it.
struct GangMemberInfo {
  std::string worker_id;
  std::string address;
  std::string port;
};

struct GangClaim {
  enum class Kind { none, held, waiting, start, blocked } kind = Kind::none;  // held: joined now; waiting: held before
  JobRecord job;       // start: the job, now active on every member
  std::string job_id;  // held: the gang holding this worker
  std::string class_id;  // held: its class
  int rank = -1;       // start, held: this worker's rank
  BudgetBlock blocked;
};

// A job as PUSH stores it (push.lua, push_batch.lua, push_unique.lua): one script
// writes the hash, its ready or delayed index and its scheduling indexes together.
struct BatchJob {
  std::string queue;
  std::string id;
  std::string class_id;
  std::string class_json;
  double rank_base = 0;
  std::optional<std::int64_t> scheduled_at_ms;
  std::vector<std::pair<std::string, std::string>> fields;
  std::optional<std::int64_t> escalate_after_ms;       // escalation index, written by the same script
  std::optional<std::int64_t> reservation_timeout_ms;  // reservation-wait index, written by the same script
};

// What lets PUSH take one round trip (JobService::push): the directory writes sent
// ahead of push.lua in its pipeline (directory first: a crash between them leaves an
// entry without a job, which reserve_ids tolerates), and the version of the queue
// config the job was prepared with, which push.lua checks.
struct PushInOneTrip {
  std::optional<long long> config_version;  // push.lua writes nothing unless the config is still at it
  bool register_id = false;     // the job directory entry (only for an id the broker minted: it cannot collide)
  bool register_queue = false;  // the queue directory entry (not needed for a queue this broker saw at this version)
};

struct BatchOutcome {
  TransitionStatus status = TransitionStatus::ok;  // ok, duplicate or queue_full (nothing stored of that queue)
  std::string duplicate_id;
  std::string full_queue, full_detail;  // [backpressure] queue_full: the queue and "depth bound strategy"
  std::vector<JobRecord> jobs;  // request order
};

// A rank (band * 2^40 + seq) as the exact integer text the scripts expect.
std::string rank_text(double rank);
// An optional time or duration (ms) as script ARGV: "" when absent.
std::string optional_text(std::optional<std::int64_t> v);
// A new job's hash fields appended to script ARGV as field, value, ...
void append_fields(std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& fields);

class JobStore {
 public:
  explicit JobStore(RedisPool& redis) : redis_(redis) {}

  // Registers id -> queue; false if the id is taken by a job that exists or a
  // workflow reserved it (reserve_workflow_ids).
  bool reserve_id(const std::string& id, const std::string& queue);
  // The same for several (id, queue), all or none: the first id that is taken, if
  // any, and then no id and no queue is registered (see job_store.cpp).
  std::optional<std::string> reserve_ids(const std::vector<std::pair<std::string, std::string>>& ids);
  // reserve_ids, then marks the ids as the workflow's (keys::workflow_job_ids): its
  // later steps and callbacks are stored under them by the workflow alone.
  std::optional<std::string> reserve_workflow_ids(const std::string& workflow_id,
                                                  const std::vector<std::pair<std::string, std::string>>& ids);
  // push.lua: the job, its ready or delayed index and its scheduling indexes in one step.
  // With `single`, PUSH's directory writes ride in the same round trip and the script
  // checks the queue config version (status stale, detail the current version).
  Transition push(const BatchJob& job, const PushInOneTrip& single = {});

  // Ids reserved first (a taken one stores nothing), then one script per queue,
  // all or nothing within the queue (store/job_store_batch.cpp).
  BatchOutcome push_batch(const std::vector<BatchJob>& jobs);

  std::optional<std::string> queue_of(const std::string& id);
  std::optional<JobRecord> get(const std::string& id);
  std::optional<JobRecord> get(const std::string& queue, const std::string& id);
  // Several jobs in one round trip ({queue, id} each); nullopt where absent.
  std::vector<std::optional<JobRecord>> get_many(const std::vector<std::pair<std::string, std::string>>& jobs);

  ClassSet load_classes(const std::string& queue);
  std::string classes_version(const std::string& queue);  // "0" before the first class
  // record_held: each claimed job joins the worker's held set in the queue (keys.hpp
  // held), in the same script: a worker with capabilities has a load to keep.
  ClaimOutcome claim(const std::string& queue, const std::string& worker_id, std::optional<std::int64_t> request_visibility_ms,
                     std::int64_t default_visibility_ms, int count, const std::string& classes_version,
                     const std::vector<EligibleClass>& eligible, bool record_held);

  // [gangs] claim_gang.lua: deliver a started gang to a held member, or hold this
  // worker as the next member of the queue's forming gang (store/job_store_gang.cpp).
  GangClaim claim_gang(const std::string& queue, const GangMemberInfo& member, std::optional<std::int64_t> request_visibility_ms,
                       std::int64_t default_visibility_ms, const std::vector<GangClass>& eligible);
  // gang_expire.lua: forming gangs past their hold deadline release their members.
  long long expire_gangs(const std::string& queue);

  Transition ack(const std::string& queue, const std::string& id, const std::string& result_json,
                 const std::string& worker_id = {});
  // outcome: retry | discard | dead_letter | requeue | reclaim (available now, attempt kept); applied only while the job is
  // still the attempt of `snapshot` (compare-and-set).
  Transition fail(const JobRecord& snapshot, const std::string& outcome, std::int64_t due_ms, const std::string& error_json,
                  const std::string& errors_json, bool require_expired, const std::string& worker_id = {});
  void forget(const std::string& id);  // drops the id -> queue directory entry
  Transition cancel(const std::string& queue, const std::string& id);
  // Extends the jobs this worker holds, in slices (one script call per 500 ids).
  std::vector<std::string> extend(const std::string& queue, const std::string& worker_id, std::int64_t visibility_ms,
                                  const std::vector<std::string>& ids);
  // queue -> ids (unknown ids dropped), resolved in slices of one HMGET each.
  std::map<std::string, std::vector<std::string>> group_by_queue(const std::vector<std::string>& ids);
  // promote.lua: due scheduled jobs and retries become available (those already past
  // their expires_at are discarded instead).
  long long promote(const std::string& queue);
  // expire_sweep.lua: up to `limit` entries of the queue's expiring index past due;
  // their jobs that still wait are discarded (error code `expired`).
  struct ExpirySweep {
    long long handled = 0;
    long long discarded = 0;
  };
  ExpirySweep sweep_expired(const std::string& queue, int limit);
  // Maintenance: which queues have a scheduled job or retry due, a forming gang
  // past its hold deadline, or a job past its expires_at (now_ms on the broker's
  // clock, as reclaim uses), in one pipeline of cheap reads: promote / expire_gangs /
  // sweep_expired run only where something is due (each script call costs Redis
  // ~40k instructions even when nothing is).
  struct DueWork {
    bool promote = false;
    bool gangs = false;
    bool expired = false;
  };
  std::vector<DueWork> due_work(const std::vector<std::string>& queues, std::int64_t now_ms);
  // [heads] Makes the queue's class-head index match its ready sets; returns the entries corrected.
  long long repair_class_heads(const std::string& queue);
  // checkpoint.lua: the holder (worker_id '' = any) commits checkpoint metadata; the newest max_count are kept.
  Transition checkpoint(const std::string& queue, const std::string& id, const std::string& worker_id,
                        const std::string& checkpoint_json, int max_count);
  BudgetUse budget(const std::string& queue);
  // Dead letter: list (newest first), retry (attempt reset, available again), discard (deleted).
  std::vector<JobRecord> dead_letter(const std::string& queue, int offset, int limit);
  long long dead_letter_size(const std::string& queue);
  Transition dead_letter_action(const std::string& queue, const std::string& id, const std::string& action);
  // Active job ids with the worker holding each (dead-worker detection).
  std::vector<std::pair<std::string, std::string>> active_jobs(const std::string& queue);
  // Active jobs whose visibility deadline passed (the reaper's work list).
  std::vector<std::string> expired_active(const std::string& queue, std::int64_t now_ms, int limit);

  std::vector<std::string> queues();
  std::size_t queue_count();
  // Deletes an empty queue (no job waiting, running, scheduled or dead-lettered)
  // and its keys; returns false (nothing deleted) when it is not empty.
  bool delete_queue_if_empty(const std::string& queue);
  // By state: available, active, scheduled, retryable, dead_letter, completed, discarded,
  // cancelled (preempted once counted; delayed = scheduled + retryable, kept for one release).
  // scheduled/retryable read the state of the first kDelayedSplitScan delayed jobs; past
  // that bound the rest count as scheduled.
  std::map<std::string, long long> queue_counts(const std::string& queue);
  static constexpr int kDelayedSplitScan = 10000;
  std::map<std::string, long long> ready_counts(const std::string& queue, const ClassSet& classes);  // per class
  bool set_paused(const std::string& queue, bool paused);
  bool is_paused(const std::string& queue);
  std::optional<std::int64_t> paused_at(const std::string& queue);  // ms; nullopt when not paused
  bool queue_exists(const std::string& queue);
  void register_queue(const std::string& queue);  // into the directory (no-op when known)

  // /health: whether Redis answers PING, and where it is (for the error text).
  bool reachable() { return redis_.ping(); }
  // /health: why Redis refuses a write (OOM under maxmemory, READONLY, MISCONF), "" when it takes one.
  std::string write_refusal();
  std::string where() const { return redis_.endpoint().describe(); }
  RedisPool& redis() { return redis_; }  // for the other stores (outside broker/store: scripts/check-layers.sh)
  // Preemption marks, escalation, reservations, holds, the controller lease.
  PreemptionStore preemption();
  // The other stores over the same connections, for the services that use them
  // (each caller includes the store's own header).
  UniqueStore unique();
  CronStore crons();
  ProgressStore progress();
  JobIndexStore index();
  StatsHistoryStore stats_history();
  UsageStore usage();  // [usage]

  // A transition script's reply: {status, job fields | detail}.
  static Transition transition_from(const RedisValue& reply);

 private:
  BatchOutcome push_batch_of_queue(const std::vector<BatchJob>& jobs);  // push_batch.lua, one queue's slot
  // The expiring-index entry of a job pushed with an expires_at (nullopt: none), sent
  // ahead of its push script: an entry whose job was never stored is dropped by the sweep.
  static std::optional<std::vector<std::string>> expiring_entry(const BatchJob& job);
  RedisPool& redis_;
};

}  // namespace ojs::broker
