// The job stores' shared types and JobStore, the job transitions: every state
// transition is one Lua script (see store/lua/); the stores only marshal
// arguments and replies. Decisions (retry or discard, which classes a worker
// may take) are made by the caller.
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

struct EligibleClass {
  std::string id;
  double bonus = 0;                        // soft score: higher is preferred within a priority band
  std::int64_t hold_enqueued_after_ms = 0; // delay scheduling: skip heads enqueued after this (0 = none)
  int gpus = 0;                            // charged to the queue's GPU budget on claim
  std::string devices_json;                // device indices assigned on claim ("" = none)
  long long gpu_memory_mb = 0;             // charged to the queue's GPU-memory budget on claim
  std::int64_t backfill_before_ms = 0;     // only jobs declared to end by then (0 = any)
  int tpu_chips = 0;                       // charged to the queue's TPU-chip budget on claim
};

// A class the budget kept from being claimed: its jobs stay available.
struct BudgetBlock {
  std::string class_id;
  long long in_use = 0;
  long long limit = 0;
  std::string kind;  // max_total_gpus | max_concurrent_gpu_jobs | max_total_gpu_memory_gb (in_use, limit in MB) | max_total_tpu_chips
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
  // The GPU limit in force: the cohort's share when the queue is in a cohort (set by
  // the cohort controller, broker/preemption/cohort_balance.cpp), else max_total_gpus.
  std::optional<long long> max_gpus;
  std::optional<long long> nominal_gpus;  // max_total_gpus as the admin set it
  std::optional<long long> cohort_gpus;   // the cohort's share in force, none outside a cohort
  std::string cohort;                     // the cohort it is in ("" : none)
  std::optional<long long> max_jobs;  // max_concurrent_gpu_jobs
  std::optional<long long> max_gpu_mem_mb;  // max_total_gpu_memory_gb, in MB
  long long gpus_in_use = 0;
  long long gpu_jobs = 0;
  long long gpu_mem_mb_in_use = 0;
  long long borrowed_gpus = 0;  // charged above nominal, from the cohort's idle share
  std::optional<long long> max_tpu_chips;  // max_total_tpu_chips
  long long tpu_chips_in_use = 0;
};
// The budget read itself (config limits, then ledger), for callers that send it
// inside a larger pipeline: QueueDirectory::budget and QueueConfigStore::budget.
std::vector<std::vector<std::string>> budget_reads(const std::string& queue);
BudgetUse budget_from(const RedisValue& limits, const RedisValue& ledger);

// Tenants' GPU quotas (tenant -> max GPUs, "*": any other) and their charged GPUs,
// read the same way (the quota hash, then the tenant ledger).
struct TenantQuotaUse {
  std::map<std::string, long long> limits;
  std::map<std::string, long long> used;
};
std::vector<std::vector<std::string>> tenant_quota_reads(const std::string& queue);
TenantQuotaUse tenant_quotas_from(const RedisValue& limits, const RedisValue& used);

struct ClaimOutcome {
  TransitionStatus status = TransitionStatus::ok;  // ok, paused or stale
  std::string current_version;
  std::vector<JobRecord> jobs;
  std::vector<BudgetBlock> budget_blocked;
  std::string rate_limited;  // the queue rate limit that cut the claim short: concurrency | rate | ""
  // Picks the commit passed over (class id, gone | held): the snapshot they were
  // decided on was stale, or a class was held for a warm worker.
  std::vector<std::pair<std::string, std::string>> passed_over;
  long long promoted = 0;  // due scheduled jobs and retries the commit made available first
};

// A gang class a fetching worker may join (claim_gang.lua).
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
  // held: joined now; waiting: held before; stale: the pick no longer holds (decide again)
  enum class Kind { none, held, waiting, start, blocked, stale } kind = Kind::none;
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

// What lets PUSH take one round trip (PushService::push): the directory writes sent
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
  std::string full_queue, full_detail;  // queue_full: the queue and "depth bound strategy"
  std::vector<JobRecord> jobs;  // request order
};

// A rank (band * 2^40 + seq) as the exact integer text the scripts expect.
std::string rank_text(double rank);
// An optional time or duration (ms) as script ARGV: "" when absent.
std::string optional_text(std::optional<std::int64_t> v);
// A finite number as script ARGV: the shortest text Lua's tonumber reads back as the same
// double (std::to_string's "%f" cost ~1.8k instructions each, 11 per claim).
std::string number_text(double v);
// A new job's hash fields appended to script ARGV as field, value, ...
void append_fields(std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& fields);

// The job transitions: PUSH (single and batch), ACK, FAIL, CANCEL, the BEAT
// extension and checkpoints, each one Lua script. The other job stores own the
// rest: JobDirectory (id -> queue), JobReads (job hashes), ClaimStore (claims),
// QueueDirectory (queues, classes, counts, pause, budget), DeadLetterStore,
// UpkeepStore (promotion, expiry, gang holds, head repair), RedisHealth.
class JobStore {
 public:
  explicit JobStore(RedisPool& redis) : redis_(redis) {}

  // push.lua: the job, its ready or delayed index and its scheduling indexes in one step.
  // With `single`, PUSH's directory writes ride in the same round trip and the script
  // checks the queue config version (status stale, detail the current version).
  Transition push(const BatchJob& job, const PushInOneTrip& single = {});

  // Ids reserved first (a taken one stores nothing), then one script per queue,
  // all or nothing within the queue (store/job_store_batch.cpp).
  BatchOutcome push_batch(const std::vector<BatchJob>& jobs);

  Transition ack(const std::string& queue, const std::string& id, const std::string& result_json,
                 const std::string& worker_id = {});
  // outcome: retry | discard | dead_letter | requeue | reclaim (available now, attempt kept); applied only while the job is
  // still the attempt of `snapshot` (compare-and-set).
  Transition fail(const JobRecord& snapshot, const std::string& outcome, std::int64_t due_ms, const std::string& error_json,
                  const std::string& errors_json, bool require_expired, const std::string& worker_id = {});
  // kill: a running job's process gets SIGKILL at once, not SIGTERM and its grace
  // (also for a job cancelled before whose process is still stopping).
  Transition cancel(const std::string& queue, const std::string& id, bool kill = false);
  // process_gone.lua: the worker that ran a cancelled job reports its process gone (or
  // is lost); true when a stop was pending for that worker and has ended.
  bool process_gone(const std::string& queue, const std::string& id, const std::string& worker_id);
  // Extends the jobs this worker holds, in slices (one script call per 500 ids).
  std::vector<std::string> extend(const std::string& queue, const std::string& worker_id, std::int64_t visibility_ms,
                                  const std::vector<std::string>& ids);
  // durable_checkpoint.lua: the holder (worker_id '' = any) saves the job's
  // durable-execution state (`state_json`), or (save false) it is deleted; detail: the
  // saved checkpoint's sequence.
  Transition durable_checkpoint(const std::string& queue, const std::string& id, bool save, const std::string& worker_id,
                                const std::string& state_json);
  // checkpoint.lua: the holder (worker_id '' = any) commits checkpoint metadata; the newest max_count are kept.
  Transition checkpoint(const std::string& queue, const std::string& id, const std::string& worker_id,
                        const std::string& checkpoint_json, int max_count);

  // A transition script's reply: {status, job fields | detail}.
  static Transition transition_from(const RedisValue& reply);
  // A lean transition (ack, fail, cancel, hold, release, update, checkpoint, the dead
  // letter actions, a waiting job's discard): the script replies without the job,
  // which is read back natively behind it in the same round trip (through Lua, in and
  // out, it cost ~20-50k instructions more). `script_keys` leave out the workflow
  // keys unless `workflow_job`; a workflow's job sent without them answers
  // need_keys, nothing written, and is sent again with them.
  static Transition lean_transition(RedisPool& redis, const std::string& script, std::vector<std::string> script_keys,
                                    bool workflow_job, const std::vector<std::string>& args, const std::string& queue,
                                    const std::string& id);

 private:
  BatchOutcome push_batch_of_queue(const std::vector<BatchJob>& jobs);  // push_batch.lua, one queue's slot
  // The expiring-index entry of a job pushed with an expires_at (nullopt: none), sent
  // ahead of its push script: an entry whose job was never stored is dropped by the sweep.
  static std::optional<std::vector<std::string>> expiring_entry(const BatchJob& job);
  RedisPool& redis_;
};

}  // namespace ojs::broker
