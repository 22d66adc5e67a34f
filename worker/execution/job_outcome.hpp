// How a finished job process is reported to the broker: exit 0 -> ACK with a
// result; anything else -> NACK with an error whose code says why.
#pragma once
#include "worker/execution/child_process.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ojs::worker {

// Why the agent stopped the process, if it did. resized: its elastic gang changed
// size; the agent starts it again at the new size instead of reporting it.
enum class StopReason { none, timeout, preempted, released, gpu_fault, cancelled, resized };

struct JobOutcome {
  enum class Kind { succeeded, failed, preempted, released, gpu_fault, cancelled };
  Kind kind = Kind::failed;
  nlohmann::json result;  // ACK result (succeeded)
  nlohmann::json error;   // NACK error (all other kinds)
  bool requeue = false;   // NACK requeue: true means no attempt is consumed
};

const char* to_string(JobOutcome::Kind kind);

// The last max_bytes of a file ("" when it cannot be read).
std::string file_tail(const std::string& path, std::size_t max_bytes = 4096);

// stdout that is one JSON document becomes the result; anything else {"stdout": tail}.
nlohmann::json result_from_stdout(const std::string& stdout_path);

// Exit 0 -> succeeded; exit n -> "exit_<n>"; killed by signal s -> "signal_<s>";
// past the timeout -> "timeout". Preempted and released jobs are NACKed with
// requeue whatever their exit status: a job that saves state on SIGTERM and
// exits 0 has not finished its work. So is a job stopped on a failed GPU, with
// an error of code and type "gpu_fault" (`fault` says which GPU and XID), which
// the broker never counts as the job's failure. A job stopped because it was
// cancelled is NACKed with code "cancelled" whatever its exit status: that report
// tells the broker its process is gone.
// A job the kernel's OOM killer stopped at its cgroup's memory limit (bytes): NACK
// "oom_killed", not retryable (it would only meet the same limit again).
JobOutcome oom_outcome(const ExitStatus& status, const std::string& stderr_path, std::uint64_t limit_bytes);

JobOutcome job_outcome(const ExitStatus& status, StopReason reason, const std::string& stdout_path,
                       const std::string& stderr_path, double timeout_s, const std::string& fault = {});

}  // namespace ojs::worker
