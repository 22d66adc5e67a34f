#include "worker/execution/job_execution.hpp"

#include "worker/config/json_file.hpp"
#include "worker/execution/job_environment.hpp"

#include <signal.h>

namespace ojs::worker {

std::unique_ptr<JobExecution> JobExecution::start(const nlohmann::json& job, const JobView& view,
                                                  const CommandSpec& command, const ExecutionSettings& settings,
                                                  SteadyClock::time_point now) {
  return launch(JobWorkspace::create(settings.work_dir, view, job), view, command, settings, now);
}

std::unique_ptr<JobExecution> JobExecution::restart(const JobWorkspace& workspace, const nlohmann::json& job,
                                                    const JobView& view, const CommandSpec& command,
                                                    const ExecutionSettings& settings, SteadyClock::time_point now) {
  workspace.reuse(job);
  return launch(workspace, view, command, settings, now);
}

std::unique_ptr<JobExecution> JobExecution::launch(JobWorkspace workspace, const JobView& view, const CommandSpec& command,
                                                   const ExecutionSettings& settings, SteadyClock::time_point now) {
  SpawnRequest request;
  request.argv = command.argv;
  request.env = job_environment(view, workspace, current_environment());
  request.cwd = workspace.dir.string();
  request.stdin_path = workspace.job_file.string();
  request.stdout_path = workspace.stdout_file.string();
  request.stderr_path = workspace.stderr_file.string();
  std::unique_ptr<JobCgroup> cgroup;
  if (settings.isolation) {  // its cgroups first, then it starts inside them (the launcher joins them before exec)
    JobLimits limits;
    if (view.memory_gb) limits.memory_bytes = static_cast<std::uint64_t>(*view.memory_gb * 1e9);
    for (const int minor : view.gpu_minors) limits.gpus.push_back({minor, view.mig});
    limits.numa_nodes.insert(view.numa_nodes.begin(), view.numa_nodes.end());
    cgroup = settings.isolation->prepare(workspace.dir.filename().string(), limits, view.cuda_version);
    const auto plan_file = (workspace.dir / "isolation.json").string();
    write_text_file_atomically(plan_file, cgroup->plan().dump());
    request.argv = settings.isolation->wrap(request.argv, plan_file);
  }
  ChildProcess process = ChildProcess::spawn(request);
  std::optional<double> timeout_s = view.timeout_s;
  if (!timeout_s && settings.default_timeout_s > 0) timeout_s = settings.default_timeout_s;
  return std::unique_ptr<JobExecution>(
      new JobExecution(view, std::move(workspace), std::move(cgroup), std::move(process), settings, timeout_s, now));
}

JobExecution::JobExecution(JobView view, JobWorkspace workspace, std::unique_ptr<JobCgroup> cgroup, ChildProcess process,
                           ExecutionSettings settings, std::optional<double> timeout_s, SteadyClock::time_point now)
    : view_(std::move(view)),
      workspace_(std::move(workspace)),
      cgroup_(std::move(cgroup)),
      process_(std::move(process)),
      settings_(std::move(settings)),
      checkpoint_(workspace_.checkpoint_file),
      timeout_s_(timeout_s),
      started_(now) {}

double JobExecution::elapsed_s(SteadyClock::time_point now) const {
  return std::chrono::duration<double>(now - started_).count();
}

void JobExecution::stop(StopReason reason, double grace_s, SteadyClock::time_point now) {
  if (reason_ != StopReason::none || !process_.running()) return;  // the first reason to stop wins
  reason_ = reason;
  kill_at_ = now + seconds_to_duration(grace_s);
  process_.signal_group(SIGTERM);
}

void JobExecution::write_grace_file(double grace_s) {
  try {
    write_text_file_atomically(workspace_.preempt_file.string(), std::to_string(static_cast<long>(grace_s)) + "\n");
  } catch (const std::exception&) {
    // The signal is the contract; the file is a courtesy.
  }
}

void JobExecution::preempt(double grace_s, SteadyClock::time_point now) {
  write_grace_file(grace_s);
  stop(StopReason::preempted, grace_s, now);
}

void JobExecution::stop_for_gpu_fault(const std::string& fault, SteadyClock::time_point now) {
  if (reason_ != StopReason::none) return;
  fault_ = fault;
  write_grace_file(view_.preemption_grace_period_s);
  stop(StopReason::gpu_fault, view_.preemption_grace_period_s, now);
}

void JobExecution::cancel(bool kill, SteadyClock::time_point now) {
  if (!kill) {
    if (reason_ != StopReason::none) return;  // already stopping: its own grace runs on
    write_grace_file(view_.preemption_grace_period_s);
    stop(StopReason::cancelled, view_.preemption_grace_period_s, now);
    return;
  }
  if (reason_ == StopReason::none) {
    if (!process_.running()) return;  // it ended by itself: that outcome is reported
    reason_ = StopReason::cancelled;
  }
  kill_at_ = now;  // a stop under way (in its grace) ends now
  if (!killed_ && process_.group_alive()) {
    process_.signal_group(SIGKILL);
    killed_ = true;
  }
}

void JobExecution::release(SteadyClock::time_point now) { stop(StopReason::released, settings_.kill_grace_s, now); }

void JobExecution::stop_for_resize(SteadyClock::time_point now) {
  if (reason_ != StopReason::none) return;
  write_grace_file(view_.preemption_grace_period_s);
  stop(StopReason::resized, view_.preemption_grace_period_s, now);
}

std::optional<JobOutcome> JobExecution::poll(SteadyClock::time_point now) {
  const auto status = process_.try_wait();
  if (!status && timeout_s_ && reason_ == StopReason::none && now - started_ >= seconds_to_duration(*timeout_s_))
    stop(StopReason::timeout, settings_.kill_grace_s, now);
  // SIGKILL at the grace deadline: the job, or what is left of its group once it exited
  // (an emptied group is not signalled: its id could be taken again).
  if (kill_at_ && !killed_ && now >= *kill_at_ && (!status || process_.group_alive())) {
    process_.signal_group(SIGKILL);
    killed_ = true;
  }
  if (!status) return std::nullopt;
  // A stop's grace covers the job's whole process group: a wrapping `sh -c` that
  // dies of the SIGTERM at once may leave the job under it writing its checkpoint.
  // Wait for the group, but not for zombies an init that does not reap would
  // leave: at most a second past the deadline.
  const bool stopping = reason_ != StopReason::none && kill_at_;
  if (stopping && process_.group_alive() && now < *kill_at_ + std::chrono::seconds(1)) return std::nullopt;
  if (reason_ == StopReason::none && cgroup_ && cgroup_->oom_killed())  // the kernel killed it at its memory limit
    return oom_outcome(*status, workspace_.stderr_file.string(), cgroup_->memory_limit().value_or(0));
  return job_outcome(*status, reason_, workspace_.stdout_file.string(), workspace_.stderr_file.string(),
                     timeout_s_.value_or(0), fault_);
}

}  // namespace ojs::worker
