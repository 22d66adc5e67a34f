#include "worker/agent/agent.hpp"

#include "worker/config/command_table.hpp"
#include "worker/execution/checkpoint_retention.hpp"
#include "worker/execution/job_environment.hpp"
#include "worker/execution/log_shipper.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/device_assignment.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/worker_load.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>
#include <cstdlib>
#include <thread>

namespace ojs::worker {

namespace {

nlohmann::json error_body(const std::string& code, const std::string& message, bool retryable) {
  return {{"code", code}, {"message", message}, {"retryable", retryable}};
}

// The devices of a capabilities document, or none when it does not parse
// (a simulated worker may advertise anything; the broker will say so).
std::vector<ml::GpuDevice> parsed_devices(const nlohmann::json& capabilities) {
  try {
    return ml::parse_capabilities(capabilities).devices;
  } catch (const std::exception&) {
    return {};
  }
}

// The SM share a job gets on MPS-shared devices (the smallest of its
// devices'), 0 when none of them is shared.
int mps_thread_percentage(const std::vector<ml::GpuDevice>& devices, const std::vector<int>& assigned) {
  int percentage = 0;
  for (const auto& d : devices)
    if (d.sharing == "mps" && std::find(assigned.begin(), assigned.end(), d.index) != assigned.end())
      percentage = percentage == 0 ? d.mps_active_thread_percentage : std::min(percentage, d.mps_active_thread_percentage);
  return percentage;
}

// The job's memory cap on each assigned device, in CUDA_VISIBLE_DEVICES order (MiB;
// 0 where the device is not MPS-shared): what the broker charged it there, its
// declared memory, else the device's fair share (ml::memory_charge_gb, the one rule).
std::vector<long long> mps_pinned_memory_mib(const std::vector<ml::GpuDevice>& devices, const std::vector<int>& assigned,
                                             const nlohmann::json& job) {
  std::vector<long long> out;
  std::optional<double> declared;
  bool read = false;
  for (const int index : assigned) {
    const auto d = std::find_if(devices.begin(), devices.end(), [&](const ml::GpuDevice& g) { return g.index == index; });
    if (d == devices.end() || d->sharing != "mps") {
      out.push_back(0);
      continue;
    }
    if (!read) declared = ml::job_gpu_memory_gb(job), read = true;
    out.push_back(static_cast<long long>(ml::memory_charge_gb(*d, declared) * 1e9 / (1024.0 * 1024.0)));
  }
  return out;
}

// The GPUs a job document asks for (0 when it asks none or does not parse: the broker judged it).
int gpus_requested(const nlohmann::json& job) {
  try {
    return ml::parse_requirements(job).hard.gpu.count;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string job_id_of(const nlohmann::json& job) {
  return job.is_object() && job.contains("id") && job["id"].is_string() ? job["id"].get<std::string>() : "";
}

}  // namespace

Agent::Agent(BrokerApi& api, WorkerConfig config, AgentOptions options, nlohmann::json capabilities,
             std::function<bool()> stop_requested)
    : api_(api),
      config_(std::move(config)),
      options_(std::move(options)),
      execution_settings_{config_.work_dir, config_.default_timeout_s, config_.kill_grace_s, options_.isolation},
      capabilities_(std::move(capabilities)),
      gpu_devices_(parsed_devices(capabilities_)),
      stop_requested_(std::move(stop_requested)),
      started_at_(format_rfc3339(now_ms())),
      retention_command_(config_.checkpoint_retention_command, config_.checkpoint_retention_timeout_s,
                         std::filesystem::path(config_.work_dir) / "checkpoint-retention") {
  for (const auto& device : gpu_devices_) devices_.set_capacity(device.index, device.max_jobs);
}

int Agent::run() {
  spdlog::info("worker {} starting queues={} concurrency={} accelerator={}", options_.worker_id,
               fmt::join(options_.queues, ","), config_.concurrency, capabilities_.value("accelerator", "cpu"));
  if (const char* own = std::getenv("CUDA_VISIBLE_DEVICES"); own && !gpu_devices_.empty())
    spdlog::warn("CUDA_VISIBLE_DEVICES={} in the worker's environment is replaced in each job by the devices it is assigned", own);
  while (turn(SteadyClock::now())) std::this_thread::sleep_for(options_.tick);
  spdlog::info("worker {} stopped", options_.worker_id);
  return 0;
}

bool Agent::turn(SteadyClock::time_point now) {
  if (!draining_ && stop_requested_ && stop_requested_()) begin_drain("shutdown signal", now);
  apply_device_faults(now);
  if (options_.telemetry && config_.telemetry_interval_s > 0 && now >= next_sample_) sample_telemetry(now);
  reap(now);
  poll_checkpoints(now);
  retention_command_.poll(now);
  ship_logs(now);
  {
    // The last ACK/NACK of this flush asks for the next jobs in the same request
    // (ACK with fetch); a broker without the extension answers without `fetch`.
    const nlohmann::json next = wants_work(now) && outbox_.ends_with_report(now) ? fetch_body() : nlohmann::json();
    if (auto fetched = outbox_.flush(api_, now, next.is_null() ? nullptr : &next)) take_fetched(*fetched, now);
  }
  if (now >= next_heartbeat_) heartbeat(now);

  if (draining_) {
    if (!released_ && now >= drain_deadline_) {
      released_ = true;
      spdlog::info("drain timeout: releasing {} running job(s)", running_.size());
      for (auto& [id, job] : running_) job.execution->release(now);
    }
    const bool reports_done = outbox_.empty() || (released_ && now >= drain_deadline_ + seconds_to_duration(config_.kill_grace_s + 30));
    return !(running_.empty() && reports_done);
  }
  // --once: also the deletions its jobs' checkpoints asked for (each bounded by its timeout).
  if (options_.once && queue_drained_once_) return !(running_.empty() && outbox_.empty() && retention_command_.idle());
  if (wants_work(now)) fetch(now);
  return true;
}

bool Agent::wants_work(SteadyClock::time_point now) const {
  return !draining_ && !(options_.once && queue_drained_once_) && !quiet_ && now >= next_fetch_ &&
         running_.size() < config_.concurrency;
}

nlohmann::json Agent::current_capabilities() const {
  nlohmann::json caps = capabilities_;
  if (auto devices = caps.find("devices"); devices != caps.end() && devices->is_array())
    for (auto& device : *devices) device["in_use"] = devices_.in_use(device.value("index", -1));
  return caps;
}

// An XID took a GPU out of service: every device on it (the GPU, or all its
// MIG devices) is advertised unhealthy with the reason from the next
// heartbeat on, which is sent now, the pool places nothing more on it, and
// the jobs running on it are stopped (stop_for_gpu_fault: grace, checkpoint,
// NACK requeue as gpu_fault) to run again elsewhere. A warning XID is counted
// on each device of its GPU (xid_warnings, last_xid_warning) and advertised.
void Agent::apply_device_faults(SteadyClock::time_point now) {
  if (!options_.device_faults) return;
  const auto faults = options_.device_faults->take();
  auto devices = capabilities_.find("devices");
  if (faults.empty() || devices == capabilities_.end() || !devices->is_array()) return;
  for (const auto& fault : faults) {
    std::set<int> lost;
    for (auto& device : *devices) {
      const int index = device.value("index", -1);
      if (device.value("parent_index", index) != static_cast<int>(fault.gpu_index)) continue;
      if (!fault.fatal) {
        device["xid_warnings"] = device.value("xid_warnings", 0) + 1;
        device["last_xid_warning"] = fault.reason;
        continue;
      }
      spdlog::warn("device {} unhealthy: {}; no new job is placed on it", index, fault.reason);
      device["healthy"] = false;
      device["health_reason"] = fault.reason;
      devices_.mark_unhealthy(index);
      lost.insert(index);
    }
    for (auto& [id, job] : running_) {
      const auto& assigned = job.execution->job().assigned_devices;
      if (std::none_of(assigned.begin(), assigned.end(), [&](int d) { return lost.count(d) != 0; })) continue;
      if (job.execution->stop_reason() != StopReason::none) continue;
      spdlog::warn("job {} stopping: {} on GPU {}; grace {}s, then requeued as gpu_fault", id, fault.reason,
                   fault.gpu_index, job.execution->job().preemption_grace_period_s);
      job.execution->stop_for_gpu_fault(fault.reason + " on GPU " + std::to_string(fault.gpu_index), now);
    }
  }
  gpu_devices_ = parsed_devices(capabilities_);
  next_heartbeat_ = now;
}

static double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Each advertised device gets its GPU's sample (`telemetry`; a MIG device its GPU's),
// and the agent's sampling cost (`telemetry` at the top: CPU ms per minute of run).
// A device at or above max_gpu_temperature_c is advertised unhealthy with the reason
// (the broker places nothing there) and refused here, until it is 5 degrees cooler.
void Agent::sample_telemetry(SteadyClock::time_point now) {
  next_sample_ = now + seconds_to_duration(config_.telemetry_interval_s);
  const double cpu_before = thread_cpu_ms();
  const auto samples = options_.telemetry->sample();
  telemetry_cpu_ms_ += thread_cpu_ms() - cpu_before;
  ++telemetry_samples_;
  const double minutes = std::max(1.0 / 60, std::chrono::duration<double>(now - started_steady_).count() / 60);
  capabilities_["telemetry"] = {{"interval_s", config_.telemetry_interval_s},
                                {"samples", telemetry_samples_},
                                {"cpu_ms_per_minute", std::round(telemetry_cpu_ms_ / minutes * 1000) / 1000}};
  auto devices = capabilities_.find("devices");
  if (devices == capabilities_.end() || !devices->is_array()) return;
  bool changed = false;
  for (auto& device : *devices) {
    const int index = device.value("index", -1);
    const int gpu = device.value("parent_index", index);
    const auto s = std::find_if(samples.begin(), samples.end(), [&](const GpuSample& g) { return static_cast<int>(g.index) == gpu; });
    if (s == samples.end()) continue;
    nlohmann::json t = nlohmann::json::object();
    if (s->utilization_pct) t["utilization_pct"] = *s->utilization_pct;
    if (s->memory_used_gb) t["memory_used_gb"] = std::round(*s->memory_used_gb * 10) / 10;
    if (s->temperature_c) t["temperature_c"] = *s->temperature_c;
    if (s->power_w) t["power_w"] = std::round(*s->power_w * 10) / 10;
    if (s->ecc_uncorrected) t["ecc_uncorrected"] = *s->ecc_uncorrected;
    device["telemetry"] = std::move(t);
    if (!s->temperature_c) continue;
    const double celsius = *s->temperature_c, limit = config_.max_gpu_temperature_c;
    if (celsius >= limit && hot_.insert(index).second && !devices_.first_unhealthy({index})) {
      spdlog::warn("device {} at {} C (limit {} C): no new job until it cools", index, celsius, limit);
      device["healthy"] = false;
      device["hot"] = true;
      device["health_reason"] = "temperature " + std::to_string(static_cast<int>(celsius)) + " C at or above " +
                                std::to_string(static_cast<int>(limit)) + " C: no new job until it cools";
      changed = true;
    } else if (celsius < limit - 5 && hot_.erase(index) && !devices_.first_unhealthy({index})) {
      spdlog::info("device {} cooled to {} C: placement resumes", index, celsius);
      device["healthy"] = true;
      device.erase("hot");
      device.erase("health_reason");
      changed = true;
    }
  }
  if (changed) {
    gpu_devices_ = parsed_devices(capabilities_);
    next_heartbeat_ = now;  // the broker hears it now, not at the next beat
  }
}

nlohmann::json Agent::fetch_body() const {
  return {{"queues", options_.queues},
          {"count", config_.concurrency - running_.size()},
          {"worker_id", options_.worker_id},
          {"started_at", started_at_},
          {"capabilities", current_capabilities()},
          {"visibility_timeout_ms", options_.visibility_timeout_ms}};
}

void Agent::fetch(SteadyClock::time_point now) {
  const BrokerReply reply = api_.fetch(fetch_body());
  if (!reply.ok()) return fetch_failed(reply.retryable(), reply.describe(), now);
  take_fetched(reply.body, now);
}

// Retryable: backoff (full jitter); else a fixed 5 s.
void Agent::fetch_failed(bool retryable, const std::string& why, SteadyClock::time_point now) {
  const auto delay = retryable ? fetch_backoff_.next_delay() : std::chrono::milliseconds(5000);
  next_fetch_ = now + delay;
  spdlog::warn("fetch failed ({}); next try in {} ms", why, delay.count());
}

void Agent::take_fetched(const nlohmann::json& body, SteadyClock::time_point now) {
  if (body.is_object() && body.contains("error")) {  // the fetch part of an ACK/NACK failed; the report stands
    const auto& error = body["error"];
    if (!error.is_object()) return fetch_failed(false, error.dump(), now);
    return fetch_failed(error.value("retryable", false), error.value("message", std::string()), now);
  }
  fetch_backoff_.reset();
  apply(read_directives(body), now);
  // The member's gangs, as a heartbeat's reply has them: a resize is followed at once.
  if (body.is_object()) follow_gangs(body.value("gangs", nlohmann::json::array()), now);
  const auto jobs = body.is_object() ? body.value("jobs", nlohmann::json::array()) : nlohmann::json::array();
  for (const auto& job : jobs) accept(job, now);
  if (jobs.empty()) {
    next_fetch_ = now + options_.poll_interval;
    if (options_.once && !queue_drained_once_) {
      queue_drained_once_ = true;
      spdlog::info("queue empty: --once finishing {} running job(s)", running_.size());
    }
  }
}

void Agent::refuse(const std::string& job_id, nlohmann::json error, bool requeue) {
  spdlog::info("job {} failed code={} before start: {}", job_id, error.value("code", ""), error.value("message", ""));
  nlohmann::json body = {{"job_id", job_id}, {"worker_id", options_.worker_id}, {"error", std::move(error)}};
  if (requeue) body["requeue"] = true;
  outbox_.push({Report::Kind::nack, job_id, std::move(body)});
}

void Agent::accept(const nlohmann::json& job, SteadyClock::time_point now) {
  const std::string id = job_id_of(job);
  if (id.empty()) {
    spdlog::error("fetch returned a job without an id; ignored");
    return;
  }
  JobView view;
  try {
    view = read_job(job);
  } catch (const std::exception& e) {
    refuse(id, error_body("invalid_request", e.what(), false), false);
    return;
  }
  spdlog::info("job {} fetched type={} queue={} attempt={}", id, view.type, view.queue, view.attempt);
  const CommandSpec* command = resolve_command(config_.commands, view.type);
  if (!command) {
    refuse(id, error_body("unsupported", "no command configured on worker " + options_.worker_id + " for type " + view.type, true),
           false);
    return;
  }
  if (auto mismatch = model_verifier_.check(view, config_)) {
    refuse(id, std::move(*mismatch), false);
    return;
  }
  view.gpus_managed = !gpu_devices_.empty();
  if (view.gpus_managed && view.assigned_devices.empty() && gpus_requested(job) > 0) {
    refuse(id, error_body("devices_unassigned", "job asks for GPUs and the broker assigned none; not started blind", true),
           false);
    return;
  }
  for (const int d : view.assigned_devices)
    if (hot_.count(d)) {
      refuse(id, error_body("device_hot", "assigned device " + std::to_string(d) + " is above its temperature limit", true), true);
      return;
    }
  if (const auto broken = devices_.first_unhealthy(view.assigned_devices)) {
    refuse(id, error_body("device_unhealthy", "assigned device " + std::to_string(*broken) + " is unhealthy", true), true);
    return;
  }
  if (!devices_.try_claim(view.assigned_devices)) {
    refuse(id, error_body("devices_busy", "assigned devices " + cuda_visible_devices(view.assigned_devices) + " are in use", true),
           true);
    return;
  }
  view.visible_devices = ml::visible_device_ids(gpu_devices_, view.assigned_devices);
  view.mps_active_thread_percentage = mps_thread_percentage(gpu_devices_, view.assigned_devices);
  view.mps_pinned_memory_mib = mps_pinned_memory_mib(gpu_devices_, view.assigned_devices, job);
  for (const int index : view.assigned_devices)
    for (const auto& d : gpu_devices_)
      if (d.index == index) {
        const int minor = d.is_mig() ? d.parent_index : d.index;
        if (std::find(view.gpu_minors.begin(), view.gpu_minors.end(), minor) == view.gpu_minors.end()) view.gpu_minors.push_back(minor);
        view.mig = view.mig || d.is_mig();
        if (d.numa_node >= 0 && std::find(view.numa_nodes.begin(), view.numa_nodes.end(), d.numa_node) == view.numa_nodes.end())
          view.numa_nodes.push_back(d.numa_node);
      }
  try {
    auto execution = JobExecution::start(job, view, *command, execution_settings_, now);
    spdlog::info("job {} started pid={} devices=[{}]", id, execution->pid(), cuda_visible_devices(view.assigned_devices));
    std::unique_ptr<LogShipper> logs;
    if (config_.log_ship_interval_s > 0)
      logs = std::make_unique<LogShipper>(execution->workspace().stdout_file, execution->workspace().stderr_file,
                                          LogShipSettings{config_.log_ship_interval_s, config_.log_max_bytes});
    auto stored = std::make_unique<StoredCheckpoints>(view.checkpoint_uri, view.checkpoint_max_count,
                                                      job.value("checkpoints", nlohmann::json()));
    running_[id] = Running{std::move(execution), now, std::move(logs), now, std::move(stored), job, std::nullopt};
  } catch (const std::exception& e) {
    devices_.release(view.assigned_devices);
    refuse(id, error_body("spawn_failed", e.what(), true), false);
  }
}

void Agent::reap(SteadyClock::time_point now) {
  for (auto it = running_.begin(); it != running_.end();) {
    JobExecution& execution = *it->second.execution;
    const auto outcome = execution.poll(now);
    if (!outcome) {
      ++it;
      continue;
    }
    const std::string id = execution.job().id;
    ship_logs_of(id, it->second, true);  // before the report: a job seen finished has its whole log
    // Work saved before stopping must reach the broker before the job is released.
    if (outcome->kind != JobOutcome::Kind::succeeded) commit_checkpoint_if_changed(it->second);
    if (execution.stop_reason() == StopReason::resized && it->second.resize_to) {
      // Started again at its gang's new size; one that could not start was reported so.
      if (restart_resized(id, it->second, now)) ++it;
      else it = running_.erase(it);
      continue;
    }
    nlohmann::json body = {{"job_id", id}, {"worker_id", options_.worker_id}};
    if (outcome->kind == JobOutcome::Kind::succeeded) {
      body["result"] = outcome->result;
      spdlog::info("job {} succeeded in {:.1f}s", id, execution.elapsed_s(now));
      outbox_.push({Report::Kind::ack, id, std::move(body)});
    } else {
      body["error"] = outcome->error;
      if (outcome->requeue) body["requeue"] = true;
      spdlog::info("job {} {} code={} in {:.1f}s", id, to_string(outcome->kind), outcome->error.value("code", ""),
                   execution.elapsed_s(now));
      outbox_.push({Report::Kind::nack, id, std::move(body)});
    }
    devices_.release(execution.job().assigned_devices);
    if (!config_.keep_work_dirs) execution.workspace().remove();
    it = running_.erase(it);
  }
}

void Agent::commit_checkpoint_if_changed(Running& running) {
  JobExecution& execution = *running.execution;
  auto metadata = execution.checkpoint().take_if_changed();
  if (!metadata) return;
  const std::string& id = execution.job().id;
  spdlog::info("job {} checkpoint epoch={} step={}", id, metadata->value("epoch", nlohmann::json()).dump(),
               metadata->value("step", nlohmann::json()).dump());
  const auto beyond = running.stored_checkpoints->record(*metadata);
  running.job["last_checkpoint"] = *metadata;  // where a restart at a new gang size resumes
  outbox_.push({Report::Kind::checkpoint, id, std::move(*metadata)});
  const auto& job = execution.job();
  for (const auto& path : prune_file_checkpoints(job.checkpoint_uri, job.checkpoint_max_count))
    spdlog::info("job {} checkpoint {} deleted: beyond the newest {}", id, path, job.checkpoint_max_count);
  for (const auto& uri : beyond) retention_command_.delete_later(id, uri);
}

void Agent::poll_checkpoints(SteadyClock::time_point now) {
  for (auto& [id, job] : running_) {
    if (now - job.last_checkpoint_poll < seconds_to_duration(config_.checkpoint_poll_s)) continue;
    job.last_checkpoint_poll = now;
    commit_checkpoint_if_changed(job);
  }
}

void Agent::ship_logs(SteadyClock::time_point now) {
  for (auto& [id, job] : running_) {
    if (!job.logs || now - job.last_log_ship < seconds_to_duration(config_.log_ship_interval_s)) continue;
    job.last_log_ship = now;
    ship_logs_of(id, job, false);
  }
}

// Best effort: a chunk the broker did not take is not sent again (the job's files
// keep it until the job ends); a flood is bounded by the shipper, not by retries.
void Agent::ship_logs_of(const std::string& id, Running& job, bool final) {
  if (!job.logs) return;
  for (int round = 0; round < (final ? 64 : 1); ++round) {
    nlohmann::json body = job.logs->take(final);
    if (body["chunks"].empty() && body["skipped_bytes"] == 0) return;
    body["worker_id"] = options_.worker_id;
    body["job_id"] = id;
    const BrokerReply reply = api_.ship_logs(body);
    if (!reply.ok()) {
      spdlog::debug("job {}: log chunk not taken ({})", id, reply.describe());
      return;
    }
  }
}

void Agent::heartbeat(SteadyClock::time_point now) {
  nlohmann::json active = nlohmann::json::array();
  for (const auto& [id, job] : running_) active.push_back(id);
  const BrokerReply reply = api_.heartbeat({{"worker_id", options_.worker_id},
                                            {"started_at", started_at_},
                                            {"active_jobs", active},
                                            {"capabilities", current_capabilities()},
                                            {"visibility_timeout_ms", options_.visibility_timeout_ms}});
  if (!reply.ok()) {
    const auto retry = std::min(seconds_to_duration(options_.heartbeat_interval_s),
                                std::chrono::duration_cast<SteadyClock::duration>(heartbeat_backoff_.next_delay()));
    next_heartbeat_ = now + retry;
    spdlog::warn("heartbeat failed ({})", reply.describe());
    return;
  }
  heartbeat_backoff_.reset();
  next_heartbeat_ = now + seconds_to_duration(options_.heartbeat_interval_s);
  apply(read_directives(reply.body), now);
  if (reply.body.is_object()) follow_gangs(reply.body.value("gangs", nlohmann::json::array()), now);
}

void Agent::follow_gangs(const nlohmann::json& gangs, SteadyClock::time_point now) {
  if (!gangs.is_array()) return;
  for (const auto& entry : gangs) {
    if (!entry.is_object() || !entry.contains("job_id") || !entry["job_id"].is_string()) continue;
    const auto it = running_.find(entry["job_id"].get<std::string>());
    if (it == running_.end()) continue;
    const auto next = read_gang(entry);
    const auto& current = it->second.execution->job().gang;
    const auto pending = it->second.resize_to ? read_gang(*it->second.resize_to) : std::nullopt;
    const int seen = pending ? pending->generation : current ? current->generation : 0;
    if (!next || !current || next->generation <= seen) continue;
    it->second.resize_to = entry;
    if (pending) continue;  // already stopping: it starts at the newest size
    if (it->second.execution->stop_reason() != StopReason::none) {
      it->second.resize_to.reset();  // stopping for another reason: that outcome is reported
      continue;
    }
    spdlog::info("job {} resizing generation={} world_size={} rank={} grace={}s", it->first, next->generation,
                 next->world_size, next->rank, it->second.execution->job().preemption_grace_period_s);
    it->second.execution->stop_for_resize(now);
  }
}

bool Agent::restart_resized(const std::string& id, Running& running, SteadyClock::time_point now) {
  nlohmann::json entry = *running.resize_to;
  running.resize_to.reset();
  entry.erase("job_id");
  running.job.update(entry);  // the new rank, world size, generation and rendezvous
  JobView view = running.execution->job();
  view.gang = read_gang(running.job);
  view.last_checkpoint = running.job.value("last_checkpoint", nlohmann::json());
  const CommandSpec* command = resolve_command(config_.commands, view.type);
  const JobWorkspace workspace = running.execution->workspace();
  running.execution.reset();  // its cgroup goes first: the new run's has the same name
  try {
    if (!command) throw std::runtime_error("no command configured for type " + view.type);
    running.execution = JobExecution::restart(workspace, running.job, view, *command, execution_settings_, now);
  } catch (const std::exception& e) {
    spdlog::warn("job {} could not start again at its new size: {}", id, e.what());
    devices_.release(view.assigned_devices);
    if (!config_.keep_work_dirs) workspace.remove();
    refuse(id, error_body("spawn_failed", e.what(), true), false);
    return false;
  }
  spdlog::info("job {} restarted pid={} generation={} world_size={} rank={}", id, running.execution->pid(),
               view.gang->generation, view.gang->world_size, view.gang->rank);
  if (config_.log_ship_interval_s > 0)  // the new run's files start empty
    running.logs = std::make_unique<LogShipper>(workspace.stdout_file, workspace.stderr_file,
                                                LogShipSettings{config_.log_ship_interval_s, config_.log_max_bytes});
  running.last_checkpoint_poll = now;
  return true;
}

void Agent::apply(const BrokerDirectives& directives, SteadyClock::time_point now) {
  if (directives.worker) {
    const bool quiet = *directives.worker == WorkerDirective::quiet;
    if (quiet != quiet_) spdlog::info("worker directive {}: {}", to_string(*directives.worker), quiet ? "fetching stops" : "fetching resumes");
    quiet_ = quiet;
    if (*directives.worker == WorkerDirective::terminate && !draining_) begin_drain("terminate directive", now);
  }
  apply_stops(directives.stops, now);
  for (const auto& preempt : directives.preemptions) {
    const auto it = running_.find(preempt.job_id);
    if (it == running_.end() || it->second.execution->stop_reason() != StopReason::none) continue;
    spdlog::info("job {} preempting grace={}s checkpoint={}", preempt.job_id, preempt.grace_period_s, preempt.checkpoint);
    it->second.execution->preempt(preempt.grace_period_s, now);
  }
}

// A cancel or kill reaches the job's process group; a job this worker does not run
// (it ended, or an earlier run of the worker ran it) is reported gone at once, so
// the broker frees its devices. Each is told on every contact until that report
// lands: a job already stopping is not stopped again (a kill still cuts a grace
// short), and a job reported gone is not reported twice.
void Agent::apply_stops(const std::vector<StopDirective>& stops, SteadyClock::time_point now) {
  std::set<std::string> told;
  for (const auto& stop : stops) {
    told.insert(stop.job_id);
    const auto it = running_.find(stop.job_id);
    if (it == running_.end()) {
      if (!reported_gone_.insert(stop.job_id).second) continue;
      spdlog::info("job {} {} by the broker: not running here, reported gone", stop.job_id, stop.kill ? "killed" : "cancelled");
      outbox_.push({Report::Kind::nack, stop.job_id,
                    {{"job_id", stop.job_id}, {"worker_id", options_.worker_id},
                     {"error", error_body("cancelled", "job cancelled; no process of it runs on worker " + options_.worker_id, false)}}});
      continue;
    }
    JobExecution& execution = *it->second.execution;
    if (execution.stop_reason() != StopReason::none && (!stop.kill || execution.killed())) continue;
    if (stop.kill)
      spdlog::info("job {} killed by the broker: SIGKILL", stop.job_id);
    else
      spdlog::info("job {} cancelled by the broker: SIGTERM, SIGKILL after {}s", stop.job_id, execution.job().preemption_grace_period_s);
    execution.cancel(stop.kill, now);
  }
  for (auto it = reported_gone_.begin(); it != reported_gone_.end();)
    it = told.count(*it) ? std::next(it) : reported_gone_.erase(it);
}

void Agent::begin_drain(const char* why, SteadyClock::time_point now) {
  draining_ = true;
  drain_deadline_ = now + seconds_to_duration(config_.drain_timeout_s);
  spdlog::info("draining ({}): {} running job(s), up to {}s", why, running_.size(), config_.drain_timeout_s);
}

}  // namespace ojs::worker
