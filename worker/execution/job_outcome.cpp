#include "worker/execution/job_outcome.hpp"

#include <fstream>

namespace ojs::worker {

namespace {

constexpr std::size_t kMaxJsonResultBytes = 1 << 20;

nlohmann::json failure(const std::string& code, const std::string& message, bool retryable,
                       const std::string& stderr_path, const ExitStatus& status) {
  nlohmann::json details = {{"stderr_tail", file_tail(stderr_path)}};
  if (status.signaled)
    details["signal"] = status.signal;
  else
    details["exit_code"] = status.code;
  return {{"code", code}, {"message", message}, {"retryable", retryable}, {"details", std::move(details)}};
}

std::string format_decimal(double seconds) {
  std::string text = std::to_string(seconds);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

const char* to_string(JobOutcome::Kind kind) {
  switch (kind) {
    case JobOutcome::Kind::succeeded: return "succeeded";
    case JobOutcome::Kind::failed: return "failed";
    case JobOutcome::Kind::preempted: return "preempted";
    case JobOutcome::Kind::released: return "released";
    case JobOutcome::Kind::gpu_fault: return "gpu_fault";
    case JobOutcome::Kind::cancelled: return "cancelled";
  }
  return "unknown";
}

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes) ? size - static_cast<std::streamoff>(max_bytes) : 0;
  in.seekg(start);
  std::string out(static_cast<std::size_t>(size - start), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

nlohmann::json result_from_stdout(const std::string& stdout_path) {
  std::string text = file_tail(stdout_path, kMaxJsonResultBytes + 1);
  if (text.size() <= kMaxJsonResultBytes) {
    auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) return parsed;
  }
  return {{"stdout", file_tail(stdout_path)}};
}

JobOutcome oom_outcome(const ExitStatus& status, const std::string& stderr_path, std::uint64_t limit_bytes) {
  JobOutcome outcome;
  outcome.error = failure("oom_killed",
                          "job exceeded its memory limit of " + format_decimal(static_cast<double>(limit_bytes) / 1e9) +
                              " GB and was killed by the kernel's OOM killer",
                          false, stderr_path, status);
  return outcome;
}

JobOutcome job_outcome(const ExitStatus& status, StopReason reason, const std::string& stdout_path,
                       const std::string& stderr_path, double timeout_s, const std::string& fault) {
  JobOutcome outcome;
  switch (reason) {
    case StopReason::resized:  // reported only when it could not be started again: the gang re-forms
    case StopReason::preempted:
      outcome.kind = JobOutcome::Kind::preempted;
      outcome.requeue = true;
      outcome.error = failure("preempted", "job preempted by the broker for higher-priority work", true,
                              stderr_path, status);
      return outcome;
    case StopReason::released:
      outcome.kind = JobOutcome::Kind::released;
      outcome.requeue = true;
      outcome.error = failure("worker_shutdown", "worker shut down before the job finished", true, stderr_path,
                              status);
      return outcome;
    case StopReason::gpu_fault:
      outcome.kind = JobOutcome::Kind::gpu_fault;
      outcome.requeue = true;
      outcome.error = failure("gpu_fault", "job stopped: " + fault, true, stderr_path, status);
      outcome.error["type"] = "gpu_fault";
      return outcome;
    case StopReason::cancelled:
      outcome.kind = JobOutcome::Kind::cancelled;
      outcome.error = failure("cancelled", "job cancelled; its process is gone", false, stderr_path, status);
      return outcome;
    case StopReason::timeout:
      outcome.error = failure("timeout", "job exceeded its timeout of " + format_decimal(timeout_s) + " s", true,
                              stderr_path, status);
      return outcome;
    case StopReason::none:
      break;
  }
  if (!status.signaled && status.code == 0) {
    outcome.kind = JobOutcome::Kind::succeeded;
    outcome.result = result_from_stdout(stdout_path);
    return outcome;
  }
  if (status.signaled)
    outcome.error = failure("signal_" + std::to_string(status.signal),
                            "job process killed by signal " + std::to_string(status.signal), true, stderr_path, status);
  else
    outcome.error = failure("exit_" + std::to_string(status.code),
                            "job process exited with code " + std::to_string(status.code), true, stderr_path, status);
  return outcome;
}

}  // namespace ojs::worker
