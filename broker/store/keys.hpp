// Redis key layout: every key the broker uses, defined once (the table in
// docs/architecture.md and the KEYS blocks of the Lua headers match this file).
//
// Slots. Every key of one queue carries the hash tag {queue}: a queue is one
// scheduling pool that lives in one Redis Cluster slot, and every transition
// script touches that slot only. Global keys (directories, worker registry,
// reservations, holds, leases, unique keys, cron) carry the tag {_global}: one
// slot of their own, never touched by a queue script.
//
// Prefix keys. A script that discovers ids while it runs (claim picks the head
// of a ready set, promote the due jobs) is passed the declared prefix keys
// job_prefix / ready_prefix (they carry the queue's hash tag) and appends the
// id it read; every other key is passed whole.
#pragma once
#include <string>
#include <vector>

namespace ojs::broker::keys {

// ---- one queue: "ojs:{q}:*" ----
inline std::string queue_prefix(const std::string& queue) { return "ojs:{" + queue + "}:"; }
inline std::string job_prefix(const std::string& queue) { return queue_prefix(queue) + "job:"; }      // + id
inline std::string job(const std::string& queue, const std::string& id) { return job_prefix(queue) + id; }  // hash: the job
inline std::string ready_prefix(const std::string& queue) { return queue_prefix(queue) + "ready:"; }  // + class id
inline std::string ready(const std::string& queue, const std::string& cls) { return ready_prefix(queue) + cls; }  // zset id -> priority score
// The class-head index: class id -> score of the first job of its ready set; a class
// with no ready job is absent. Claim reads every eligible class's head from it in one
// command; every write to a ready set keeps it (_lib.lua ready_add / ready_remove).
inline std::string class_heads(const std::string& queue) { return queue_prefix(queue) + "heads"; }  // zset class id -> head score
// The requirement classes: hash class id -> canonical JSON, and '#' + class id -> the
// number of stored jobs in it; the class goes when that reaches 0 (_lib.lua class_enter / class_leave).
inline std::string classes(const std::string& queue) { return queue_prefix(queue) + "classes"; }
inline std::string classes_version(const std::string& queue) { return queue_prefix(queue) + "classes:ver"; }  // string, bumped per new class
inline std::string delayed(const std::string& queue) { return queue_prefix(queue) + "delayed"; }  // zset id -> due ms
inline std::string active(const std::string& queue) { return queue_prefix(queue) + "active"; }    // zset id -> visibility deadline ms
inline std::string dead(const std::string& queue) { return queue_prefix(queue) + "dead"; }        // zset id -> dead-lettered at ms
inline std::string stats(const std::string& queue) { return queue_prefix(queue) + "stats"; }      // hash counters, m<minute>:<what> rollup
// Finished jobs by terminal state (completed, discarded, cancelled), for the
// admin listing: zset id -> finished at ms, written by the script that finishes the
// job (_lib.lua job_finished), trimmed to the queue's retention by the broker.
inline std::string finished_prefix(const std::string& queue) { return queue_prefix(queue) + "finished:"; }  // + state
inline std::string finished(const std::string& queue, const std::string& state) { return finished_prefix(queue) + state; }
// Jobs an operator holds (state `pending`, POST /jobs/{id}/hold): out of
// their ready set or the delayed zset, so no claim sees them; zset id -> held at ms.
inline std::string on_hold(const std::string& queue) { return queue_prefix(queue) + "on-hold"; }
// A job's log (the worker's stdout/stderr chunks): a stream per job,
// deleted with the job (purge_finished.lua, dead_letter.lua discard).
inline std::string log_prefix(const std::string& queue) { return queue_prefix(queue) + "log:"; }  // + id
inline std::string log(const std::string& queue, const std::string& id) { return log_prefix(queue) + id; }
inline std::string paused(const std::string& queue) { return queue_prefix(queue) + "paused"; }    // string, present while paused
inline std::string seq(const std::string& queue) { return queue_prefix(queue) + "seq"; }          // string, FIFO sequence
inline std::string events(const std::string& queue) { return queue_prefix(queue) + "events"; }    // stream (capped)
inline std::string config(const std::string& queue) { return queue_prefix(queue) + "config"; }    // hash: budgets, limits
inline std::string ledger(const std::string& queue) { return queue_prefix(queue) + "ledger"; }    // hash: GPUs in use
inline std::string tenant_quotas(const std::string& queue) { return queue_prefix(queue) + "tenant-quotas"; }  // tenant -> max GPUs
inline std::string tenant_ledger(const std::string& queue) { return queue_prefix(queue) + "tenant-ledger"; }  // tenant -> GPUs in use
// Resource accounting (_lib_accounting.lua): the journal of ended attempts
// (a list, one line each, and a completion line per ACK; settled by settle.lua
// into the three hashes and the completions' counts before they are read), the
// decayed use per tenant the `fair` order weighs (tenant -> 'at u...', tenant|run ->
// 'n...'), the totals (tenant TAB resource -> resource-microseconds, never decayed)
// and the per-hour rollup (hour since the epoch TAB tenant TAB type TAB worker TAB
// resource -> resource-microseconds, trimmed to --usage-retention-hours).
inline std::string usage_journal(const std::string& queue) { return queue_prefix(queue) + "usage-journal"; }
inline std::string usage(const std::string& queue) { return queue_prefix(queue) + "usage"; }
inline std::string usage_totals(const std::string& queue) { return queue_prefix(queue) + "usage-totals"; }
inline std::string usage_hours(const std::string& queue) { return queue_prefix(queue) + "usage-hours"; }
inline std::string rate_window(const std::string& queue) { return queue_prefix(queue) + "rate-window"; }  // starts (ms) in the rate period
inline std::string diagnosis(const std::string& queue, const std::string& cls) { return queue_prefix(queue) + "diag:" + cls; }
inline std::string preempting(const std::string& queue) { return queue_prefix(queue) + "preempting"; }    // zset id (an elastic gang member leaving: id TAB worker) -> deadline
// jobs pushed with an expires_at, for the maintenance pass's sweep (expire_sweep.lua).
inline std::string expiring(const std::string& queue) { return queue_prefix(queue) + "expiring"; }  // zset id -> expires_at ms
// The last 64 run times (ms, newest first) of each job type's completed jobs,
// a list per type written by settle.lua from the ACKs' completion lines: the learned median the
// start estimate gives a running job that declares no end (broker/estimate).
inline std::string run_times_prefix(const std::string& queue) { return queue_prefix(queue) + "run-times:"; }  // + job type
inline std::string run_times(const std::string& queue, const std::string& type) { return run_times_prefix(queue) + type; }
// The newest run times of a type that count (settle.lua: the list
// holds up to twice as many between two trims).
inline constexpr int run_times_kept = 64;
inline std::string escalations(const std::string& queue) { return queue_prefix(queue) + "escalations"; }  // zset id -> due
inline std::string reservation_waits(const std::string& queue) { return queue_prefix(queue) + "reservation-waits"; }  // zset id -> due
// the gang forming in a queue (at most one holds members: id -> hold deadline ms),
// and the starts not yet delivered to held members (lex zset "worker\tjob id\tstart no", score 0).
inline std::string gangs(const std::string& queue) { return queue_prefix(queue) + "gangs"; }
inline std::string gang_deliveries(const std::string& queue) { return queue_prefix(queue) + "gang-deliveries"; }
// Running elastic gangs below their max_size: zset id -> the ready score the gang had
// (its place in the queue's order). Entries of gangs that ended or filled are dropped
// by claim_gang when it meets them.
inline std::string gangs_growing(const std::string& queue) { return queue_prefix(queue) + "gangs-growing"; }
// What each worker holds in this queue: set of job ids, one set per worker, written by
// the claim scripts in the same step as the claim and emptied by ack/fail (verified
// against the jobs when read: WorkerStore). Beside the jobs, so a FETCH needs no
// write to the global slot after its claim.
inline std::string held_prefix(const std::string& queue) { return queue_prefix(queue) + "held:"; }  // + worker id
inline std::string held(const std::string& queue, const std::string& worker_id) { return held_prefix(queue) + worker_id; }
// Workflows (OJS level 3), in the slot of the queue their jobs share: the workflow
// hash, and the workflows whose batch callbacks are due to be enqueued (id -> since ms).
inline std::string workflow_prefix(const std::string& queue) { return queue_prefix(queue) + "workflow:"; }  // + id
inline std::string workflow(const std::string& queue, const std::string& id) { return workflow_prefix(queue) + id; }
inline std::string workflow_dispatch(const std::string& queue) { return queue_prefix(queue) + "workflow-dispatch"; }
// The keys a job transition (ack, fail, cancel) declares to advance the job's
// workflow, in the order _lib_workflows.lua's workflow_keys reads them.
inline std::vector<std::string> workflow_transition_keys(const std::string& queue) {
  return {workflow_prefix(queue), job_prefix(queue),  ready_prefix(queue),      seq(queue),
          delayed(queue),         classes(queue),     classes_version(queue),   escalations(queue),
          reservation_waits(queue), workflow_dispatch(queue), class_heads(queue)};
}

// The keys an end of a running attempt (ack, fail, cancel) declares to
// charge its resource-seconds (the journal) and free what it held under `fair`
// (the usage hash), in the order _lib_accounting.lua's usage_keys reads them.
inline std::vector<std::string> usage_transition_keys(const std::string& queue) {
  return {usage_journal(queue), usage(queue)};
}

// The keys settle.lua declares, in its order: the journal it settles and what it
// writes (the completions' counts, finished index and run times; the usage fold's),
// and the job prefix (a discard joins its finished index only if the job is still it).
inline std::vector<std::string> settle_keys(const std::string& queue) {
  return {usage_journal(queue), stats(queue),        finished_prefix(queue), run_times_prefix(queue),
          usage(queue),         usage_totals(queue), usage_hours(queue),     config(queue),
          job_prefix(queue)};
}

// ---- global: one slot of their own, the hash tag {_global} ----
// No queue can be named "_global" (queue names match ^[a-z0-9][a-z0-9.-]*$), so no
// queue key shares these names. A script over global keys touches only these;
// a queue script never touches them: work that needs both is two calls, ordered so
// that a crash between them loses nothing (see docs/architecture.md, "Slots").
inline const std::string queue_directory = "ojs:{_global}:queues";   // hash queue -> first seen (ms)
inline const std::string job_directory = "ojs:{_global}:job-queue";  // hash job id -> queue
inline const std::string workflow_directory = "ojs:{_global}:workflow-queue";  // hash workflow id -> queue of its jobs
// hash job id -> workflow id: every job id a workflow reserved at creation (later
// chain steps, callbacks), so that a plain PUSH never takes one before it is stored.
inline const std::string workflow_job_ids = "ojs:{_global}:workflow-job-ids";
inline const std::string health_probe = "ojs:{_global}:health-probe";  // string: /health's write probe (expires in 60 s)
inline const std::string workers = "ojs:{_global}:workers";          // zset worker id -> last contact (ms)
inline std::string worker(const std::string& id) { return "ojs:{_global}:worker:" + id; }  // hash: last_seen, capabilities, queues, state
// The queues where a worker may hold jobs (their held:<worker> sets): added by the
// worker's contact before it can claim there, dropped when the worker is forgotten.
inline std::string worker_queues(const std::string& id) { return "ojs:{_global}:worker:" + id + ":queues"; }  // set of queues
// The devices an admin drained on the worker (no new job is placed on them), by index.
inline std::string worker_drained(const std::string& id) { return "ojs:{_global}:worker:" + id + ":drained"; }  // set of indices
// Before the held sets: hash job id -> load JSON, written by the broker after each
// claim. Only read now, to fold what an older broker left into the held sets (legacy_keys.cpp).
inline std::string legacy_worker_jobs(const std::string& id) { return "ojs:{_global}:worker:" + id + ":jobs"; }
inline const std::string holds = "ojs:{_global}:holds";                 // hash worker id -> capacity hold JSON
inline const std::string reservations = "ojs:{_global}:reservations";   // hash reservation id -> JSON
inline const std::string preemption_leader = "ojs:{_global}:preemption:leader";  // string: lease owner, PX
// Unique jobs: uniqueness key (SHA-256 hex of the canonical dimensions) -> "queue id"
// of the job holding it; expires with the policy's period when it has one.
inline std::string unique(const std::string& uniqueness_key) { return "ojs:{_global}:unique:" + uniqueness_key; }
// Cron: the registry (name -> definition JSON), each cron's state (next_run_at,
// last_run_at, run_count, last_job "queue id") and the ticker's leader lease.
inline const std::string cron_registry = "ojs:{_global}:cron";
inline std::string cron_state(const std::string& name) { return "ojs:{_global}:cron:state:" + name; }
inline const std::string cron_leader = "ojs:{_global}:cron:leader";
// The ticker's indexes, so that a pass reads the due crons only: name -> next_run_at ms
// (zset), the names with deferred ticks (set), and name -> tenant ("" = none) of each cron.
inline const std::string cron_due = "ojs:{_global}:cron:due";
inline const std::string cron_deferred = "ojs:{_global}:cron:deferred";
inline const std::string cron_tenants = "ojs:{_global}:cron:tenants";
// A PUSH's Idempotency-Key: SHA-256 hex of (operation, tenant, key) ->
// "job id request digest", expiring 24 h after the first request (IdempotencyStore).
inline std::string idempotency(const std::string& scope) { return "ojs:{_global}:idempotency:" + scope; }
// Cohorts: the epoch of the latest pass that set the members' shares (INCR per pass).
inline std::string cohort_epoch() { return "ojs:{_global}:cohort-epoch"; }
// Webhook subscriptions (ojs-webhooks.md): hash id -> subscription JSON (its secret
// and tenant included); per subscription a list of its latest deliveries, newest
// first; and per delivery a claim that one broker of several sends it (expires).
inline const std::string webhooks = "ojs:{_global}:webhooks";
inline std::string webhook_deliveries(const std::string& id) { return "ojs:{_global}:webhook:" + id + ":deliveries"; }
inline std::string webhook_claim(const std::string& delivery_id) { return "ojs:{_global}:webhook-claim:" + delivery_id; }
// The schema registry (ojs-schema-registry.md): per tenant ("" = none) and job type,
// a hash version -> registered schema JSON. '/' is in no tenant name, so the key
// names one tenant and type.
inline std::string schemas(const std::string& tenant, const std::string& job_type) {
  return "ojs:{_global}:schemas:" + tenant + "/" + job_type;
}
// Worker pools (ojs-fair-scheduling.md §6): hash pool name -> its definition (JSON),
// and a version every write bumps, which a broker's cached copies are checked against.
inline const std::string pools = "ojs:{_global}:pools";
inline const std::string pools_version = "ojs:{_global}:pools:ver";
inline const std::string& worker_index = workers;  // (spec's name for the same key)

}  // namespace ojs::broker::keys
