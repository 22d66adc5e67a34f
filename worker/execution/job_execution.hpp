// One running job: its process, workspace, deadlines and checkpoint file. It
// never blocks: the agent calls poll() on every loop turn, which enforces the
// timeout (SIGTERM, then SIGKILL after a grace) and the preemption deadline,
// and returns the outcome once the process has exited.
#pragma once
#include "worker/config/command_table.hpp"
#include "worker/execution/checkpoint_watcher.hpp"
#include "worker/execution/child_process.hpp"
#include "worker/execution/job_outcome.hpp"
#include "worker/execution/job_view.hpp"
#include "worker/execution/job_workspace.hpp"
#include "worker/isolation/job_isolation.hpp"

#include <chrono>
#include <memory>
#include <optional>

namespace ojs::worker {

using SteadyClock = std::chrono::steady_clock;

// Config values are fractional seconds; deadlines are steady-clock points.
inline SteadyClock::duration seconds_to_duration(double seconds) {
  return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
}

struct ExecutionSettings {
  std::filesystem::path work_dir = "/tmp/ojs-worker";
  double default_timeout_s = 0;  // used when the job sets none; 0: unlimited
  double kill_grace_s = 10;      // SIGTERM -> SIGKILL on timeout and release
  const JobIsolation* isolation = nullptr;  // null: jobs run as plain processes (isolation off)
};

class JobExecution {
 public:
  // Creates the workspace and starts the process. Throws std::system_error
  // (cannot start) or std::filesystem_error (workspace).
  static std::unique_ptr<JobExecution> start(const nlohmann::json& job, const JobView& view,
                                             const CommandSpec& command, const ExecutionSettings& settings,
                                             SteadyClock::time_point now = SteadyClock::now());
  // Starts the job again in the workspace of its previous run (which must be gone:
  // its cgroup has the same name), e.g. at an elastic gang's new size. Throws as start.
  static std::unique_ptr<JobExecution> restart(const JobWorkspace& workspace, const nlohmann::json& job, const JobView& view,
                                               const CommandSpec& command, const ExecutionSettings& settings,
                                               SteadyClock::time_point now = SteadyClock::now());

  // The outcome once the process is gone; signals it when a deadline passed.
  std::optional<JobOutcome> poll(SteadyClock::time_point now = SteadyClock::now());

  // Preemption: write the grace to $OJS_PREEMPT_FILE, SIGTERM now, SIGKILL after grace_s.
  void preempt(double grace_s, SteadyClock::time_point now = SteadyClock::now());
  // A fatal XID on one of its GPUs (`fault`: which and why): the preemption
  // protocol with the job's own grace, so a job can checkpoint before it moves.
  void stop_for_gpu_fault(const std::string& fault, SteadyClock::time_point now = SteadyClock::now());
  // Cancelled while it ran: SIGTERM now, SIGKILL after the job's own grace
  // (ext_ml_preemption_grace_period_s, also written to $OJS_PREEMPT_FILE). kill:
  // SIGKILL now, also for a job already stopping for any reason.
  void cancel(bool kill, SteadyClock::time_point now = SteadyClock::now());
  // Shutdown: same protocol with the configured kill grace.
  void release(SteadyClock::time_point now = SteadyClock::now());
  // Its elastic gang changed size: the preemption protocol with the job's own grace
  // (a job checkpoints on SIGTERM), after which the agent starts it again.
  void stop_for_resize(SteadyClock::time_point now = SteadyClock::now());

  const JobView& job() const { return view_; }
  const JobCgroup* cgroup() const { return cgroup_.get(); }  // null when not isolated
  const JobWorkspace& workspace() const { return workspace_; }
  pid_t pid() const { return process_.pid(); }
  StopReason stop_reason() const { return reason_; }
  bool killed() const { return killed_; }  // SIGKILL sent
  CheckpointWatcher& checkpoint() { return checkpoint_; }
  double elapsed_s(SteadyClock::time_point now = SteadyClock::now()) const;

 private:
  JobExecution(JobView view, JobWorkspace workspace, std::unique_ptr<JobCgroup> cgroup, ChildProcess process,
               ExecutionSettings settings, std::optional<double> timeout_s, SteadyClock::time_point now);
  static std::unique_ptr<JobExecution> launch(JobWorkspace workspace, const JobView& view, const CommandSpec& command,
                                              const ExecutionSettings& settings, SteadyClock::time_point now);
  void stop(StopReason reason, double grace_s, SteadyClock::time_point now);
  void write_grace_file(double grace_s);  // $OJS_PREEMPT_FILE: the seconds until SIGKILL

  JobView view_;
  JobWorkspace workspace_;
  std::unique_ptr<JobCgroup> cgroup_;  // isolated jobs; destroyed after process_ (which kills a live child)
  ChildProcess process_;
  ExecutionSettings settings_;
  CheckpointWatcher checkpoint_;
  std::optional<double> timeout_s_;
  SteadyClock::time_point started_;
  StopReason reason_ = StopReason::none;
  std::optional<SteadyClock::time_point> kill_at_;
  bool killed_ = false;
  std::string fault_;  // StopReason::gpu_fault: the XID that stopped it
};

}  // namespace ojs::worker
