// The worker agent loop, one thread: FETCH jobs while there is room, run them
// as processes, report outcomes, heartbeat, follow broker directives (quiet,
// terminate, preempt, cancel, kill) and drain on shutdown. Every call it makes is
// non-blocking except the HTTP requests themselves, so one loop turn is cheap
// and the order of log lines follows the order of events.
#pragma once
#include "worker/agent/backoff.hpp"
#include "worker/agent/broker_api.hpp"
#include "worker/agent/device_pool.hpp"
#include "worker/agent/directives.hpp"
#include "worker/agent/report_outbox.hpp"
#include "worker/config/worker_config.hpp"
#include "worker/discovery/gpu_telemetry.hpp"
#include "worker/discovery/xid_watcher.hpp"
#include "worker/execution/job_execution.hpp"
#include "worker/execution/log_shipper.hpp"
#include "worker/execution/model_integrity.hpp"
#include "worker/execution/checkpoint_retention.hpp"
#include "worker/execution/retention_command.hpp"
#include "ojs/ml/capabilities.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ojs::worker {

struct AgentOptions {
  std::string worker_id;
  std::vector<std::string> queues{"default"};
  std::chrono::milliseconds poll_interval{1000};  // between FETCHes that found nothing
  std::chrono::milliseconds tick{50};             // how often running jobs are checked
  double heartbeat_interval_s = 10;
  long visibility_timeout_ms = 60000;
  bool once = false;  // exit once a FETCH comes back empty and running jobs are done
  DeviceFaults* device_faults = nullptr;  // posted by the XID watcher; null when none runs
  const JobIsolation* isolation = nullptr;  // null: jobs run without cgroups and a private /dev
  const GpuTelemetry* telemetry = nullptr;  // null: no GPU telemetry (no NVML, simulated devices)
};

class Agent {
 public:
  Agent(BrokerApi& api, WorkerConfig config, AgentOptions options, nlohmann::json capabilities,
        std::function<bool()> stop_requested);

  // Runs until drained (shutdown signal, terminate directive, or --once done). Returns the exit code.
  int run();

  // One loop turn; false when the agent is done. Public for tests.
  bool turn(SteadyClock::time_point now);

  std::size_t active_jobs() const { return running_.size(); }

 private:
  struct Running {
    std::unique_ptr<JobExecution> execution;
    SteadyClock::time_point last_checkpoint_poll;
    std::unique_ptr<LogShipper> logs;  // null: logs are not shipped
    SteadyClock::time_point last_log_ship;
    std::unique_ptr<StoredCheckpoints> stored_checkpoints;  // beyond max_count outside file://: retention_command_
    // The job as it was last started, with the newest checkpoint this worker
    // committed as its last_checkpoint: what a restart at a new gang size runs.
    nlohmann::json job;
    // The rendezvous of its elastic gang's next generation (a heartbeat's `gangs`
    // entry) while the process stops to be started again at that size.
    std::optional<nlohmann::json> resize_to;
  };

  nlohmann::json current_capabilities() const;
  void apply_device_faults(SteadyClock::time_point now);
  void sample_telemetry(SteadyClock::time_point now);  // every telemetry_interval_s
  bool wants_work(SteadyClock::time_point now) const;  // a free slot, fetching allowed and due
  nlohmann::json fetch_body() const;
  void fetch(SteadyClock::time_point now);
  void fetch_failed(bool retryable, const std::string& why, SteadyClock::time_point now);
  // A FETCH reply's body, or the `fetch` part of an ACK/NACK reply: directives, then jobs.
  void take_fetched(const nlohmann::json& body, SteadyClock::time_point now);
  void accept(const nlohmann::json& job, SteadyClock::time_point now);
  void refuse(const std::string& job_id, nlohmann::json error, bool requeue);
  void reap(SteadyClock::time_point now);
  void poll_checkpoints(SteadyClock::time_point now);
  void commit_checkpoint_if_changed(Running& job);
  void heartbeat(SteadyClock::time_point now);
  // A heartbeat's or FETCH's reply `gangs`: a running member whose elastic gang has a newer
  // generation is stopped (grace, checkpoint), then started again at the new size.
  void follow_gangs(const nlohmann::json& gangs, SteadyClock::time_point now);
  // Starts a job stopped for a resize again at its gang's new size; false when it
  // could not start (the job is then reported as a failed start).
  bool restart_resized(const std::string& id, Running& job, SteadyClock::time_point now);
  void ship_logs(SteadyClock::time_point now);                   // running jobs, every log_ship_interval_s
  void ship_logs_of(const std::string& id, Running& job, bool final);  // final: all that is left
  void apply(const BrokerDirectives& directives, SteadyClock::time_point now);
  void apply_stops(const std::vector<StopDirective>& stops, SteadyClock::time_point now);
  void begin_drain(const char* why, SteadyClock::time_point now);

  BrokerApi& api_;
  WorkerConfig config_;
  AgentOptions options_;
  ExecutionSettings execution_settings_;
  nlohmann::json capabilities_;
  std::vector<ml::GpuDevice> gpu_devices_;  // capabilities_.devices parsed: MIG UUIDs for CUDA_VISIBLE_DEVICES
  std::function<bool()> stop_requested_;
  // This run's start, sent with every FETCH and heartbeat (the worker protocol's
  // started_at): a terminate directive ends with this run, so a restart under the
  // same worker id is told to run.
  std::string started_at_;

  std::map<std::string, Running> running_;  // by job id
  DevicePool devices_;
  ModelVerifier model_verifier_;
  RetentionCommand retention_command_;
  ReportOutbox outbox_;
  ExponentialBackoff fetch_backoff_;
  ExponentialBackoff heartbeat_backoff_;
  SteadyClock::time_point next_fetch_{};
  SteadyClock::time_point next_heartbeat_{};
  std::set<int> hot_;  // devices at or above max_gpu_temperature_c: out of placement until they cool
  SteadyClock::time_point next_sample_{};
  SteadyClock::time_point started_steady_ = SteadyClock::now();
  long long telemetry_samples_ = 0;
  double telemetry_cpu_ms_ = 0;  // the agent thread's CPU time spent sampling
  std::set<std::string> reported_gone_;  // cancelled jobs not run here, already reported gone
  bool quiet_ = false;
  bool queue_drained_once_ = false;
  bool draining_ = false;
  bool released_ = false;
  SteadyClock::time_point drain_deadline_{};
};

}  // namespace ojs::worker
