// Redis key layout (documented in docs/architecture.md). Every key of one queue
// carries the hash tag {queue}, so a queue is one scheduling pool that lives in
// one Redis Cluster slot and every Lua script touches a single slot.
#pragma once
#include <string>

namespace ojs::broker::keys {

inline std::string queue_prefix(const std::string& queue) { return "ojs:{" + queue + "}:"; }
inline std::string job(const std::string& queue, const std::string& id) { return queue_prefix(queue) + "job:" + id; }
inline std::string ready(const std::string& queue, const std::string& cls) { return queue_prefix(queue) + "ready:" + cls; }
inline std::string classes(const std::string& queue) { return queue_prefix(queue) + "classes"; }
inline std::string classes_version(const std::string& queue) { return queue_prefix(queue) + "classes:ver"; }
inline std::string delayed(const std::string& queue) { return queue_prefix(queue) + "delayed"; }
inline std::string active(const std::string& queue) { return queue_prefix(queue) + "active"; }
inline std::string dead(const std::string& queue) { return queue_prefix(queue) + "dead"; }
inline std::string stats(const std::string& queue) { return queue_prefix(queue) + "stats"; }
inline std::string paused(const std::string& queue) { return queue_prefix(queue) + "paused"; }
inline std::string events(const std::string& queue) { return queue_prefix(queue) + "events"; }
inline std::string seq(const std::string& queue) { return queue_prefix(queue) + "seq"; }  // FIFO sequence
inline std::string config(const std::string& queue) { return queue_prefix(queue) + "config"; }  // budgets, limits
inline std::string ledger(const std::string& queue) { return queue_prefix(queue) + "ledger"; }  // GPUs in use
inline std::string tenant_quotas(const std::string& queue) { return queue_prefix(queue) + "tenant-quotas"; }  // tenant -> max GPUs
inline std::string tenant_ledger(const std::string& queue) { return queue_prefix(queue) + "tenant-ledger"; }  // tenant -> GPUs in use
inline std::string rate_window(const std::string& queue) { return queue_prefix(queue) + "rate-window"; }  // starts (ms) in the rate period
inline std::string diagnosis(const std::string& queue, const std::string& cls) { return queue_prefix(queue) + "diag:" + cls; }

// Global (unslotted) keys: small directories, never part of a transition script.
inline const std::string queue_directory = "ojs:queues";   // hash queue -> first seen (ms)
inline const std::string job_directory = "ojs:job-queue";  // hash job id -> queue
// Unique jobs: uniqueness key (SHA-256 hex of the canonical dimensions) -> "queue id"
// of the job holding it; expires with the policy's period when it has one.
inline std::string unique(const std::string& uniqueness_key) { return "ojs:unique:" + uniqueness_key; }
// Cron: the registry (name -> definition JSON), each cron's state (next_run_at,
// last_run_at, run_count, last_job "queue id") and the ticker's leader lease.
inline const std::string cron_registry = "ojs:cron";
inline std::string cron_state(const std::string& name) { return "ojs:cron:state:" + name; }
inline const std::string cron_leader = "ojs:cron:leader";
// Worker registry: never part of a queue's transition scripts.
inline const std::string worker_index = "ojs:workers";     // zset worker id -> last contact (ms)
inline std::string worker(const std::string& id) { return "ojs:worker:" + id; }              // hash: state, capabilities, ...
inline std::string worker_jobs(const std::string& id) { return "ojs:worker:" + id + ":jobs"; }  // hash job id -> load JSON

}  // namespace ojs::broker::keys
