// Deletes checkpoints the worker cannot delete itself (s3://, gs://, az://: it holds
// no client for them) with the operator's command (config
// checkpoint_retention_command): one process per URI, the URI appended as the last
// argument, so a plain CLI is the command (`aws s3 rm --recursive URI`) and each
// failure names its URI. One at a time and polled from the agent's loop, never
// waited for: a slow store holds up deletions, not jobs. A process past the timeout
// is killed; a failure is logged, never retried, and fails no job.
#pragma once
#include "worker/execution/child_process.hpp"
#include "worker/execution/job_execution.hpp"

#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ojs::worker {

class RetentionCommand {
 public:
  // An empty argv: deletions are not run (logged as left in place).
  RetentionCommand(std::vector<std::string> argv, double timeout_s, std::filesystem::path output_dir);
  ~RetentionCommand();  // what is still queued is logged as left in place; a running process is killed

  void delete_later(const std::string& job_id, const std::string& uri);
  // Reaps the running process (or kills it past its timeout) and starts the next.
  void poll(SteadyClock::time_point now);
  bool idle() const { return !running_ && queue_.empty(); }

  // Beyond this many waiting URIs the oldest are dropped (logged): a store down for
  // a long time must not grow the agent's memory.
  static constexpr std::size_t kMaxQueued = 1024;

 private:
  struct Deletion {
    std::string job_id;
    std::string uri;
  };
  struct Run {
    Deletion deletion;
    ChildProcess process;
    SteadyClock::time_point deadline;
  };
  void start_next(SteadyClock::time_point now);
  void finish(const Run& run, const ExitStatus& status) const;

  std::vector<std::string> argv_;
  double timeout_s_;
  std::filesystem::path output_dir_;  // the running process's stdout and stderr
  std::deque<Deletion> queue_;
  std::optional<Run> running_;
};

}  // namespace ojs::worker
