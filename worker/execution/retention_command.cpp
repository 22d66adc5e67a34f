#include "worker/execution/retention_command.hpp"

#include "worker/execution/job_environment.hpp"
#include "worker/execution/job_outcome.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <system_error>

namespace ojs::worker {

RetentionCommand::RetentionCommand(std::vector<std::string> argv, double timeout_s, std::filesystem::path output_dir)
    : argv_(std::move(argv)), timeout_s_(timeout_s), output_dir_(std::move(output_dir)) {}

RetentionCommand::~RetentionCommand() {
  if (running_) spdlog::warn("job {} checkpoint {} not deleted: the worker stopped during its deletion", running_->deletion.job_id, running_->deletion.uri);
  for (const auto& d : queue_) spdlog::warn("job {} checkpoint {} not deleted: the worker stopped first", d.job_id, d.uri);
}

void RetentionCommand::delete_later(const std::string& job_id, const std::string& uri) {
  if (argv_.empty()) {
    spdlog::info("job {} checkpoint {} left in place: beyond max_count, no checkpoint_retention_command", job_id, uri);
    return;
  }
  if (queue_.size() >= kMaxQueued) {
    spdlog::warn("job {} checkpoint {} not deleted: {} deletions already wait", queue_.front().job_id, queue_.front().uri, kMaxQueued);
    queue_.pop_front();
  }
  queue_.push_back({job_id, uri});
}

void RetentionCommand::poll(SteadyClock::time_point now) {
  if (running_) {
    if (auto status = running_->process.try_wait()) {
      finish(*running_, *status);
      running_.reset();
    } else if (now >= running_->deadline) {
      running_->process.signal_group(SIGKILL);
      running_->process.wait();
      spdlog::warn("job {} checkpoint {} not deleted: {} still ran after {}s, killed", running_->deletion.job_id,
                   running_->deletion.uri, argv_.front(), timeout_s_);
      running_.reset();
    }
  }
  if (!running_) start_next(now);
}

void RetentionCommand::start_next(SteadyClock::time_point now) {
  while (!running_ && !queue_.empty()) {
    Deletion next = std::move(queue_.front());
    queue_.pop_front();
    SpawnRequest request;
    request.argv = argv_;
    request.argv.push_back(next.uri);
    request.env = current_environment();
    request.stdin_path = "/dev/null";
    request.stdout_path = (output_dir_ / "checkpoint-retention.out").string();
    request.stderr_path = (output_dir_ / "checkpoint-retention.err").string();
    try {
      std::filesystem::create_directories(output_dir_);
      running_.emplace(Run{next, ChildProcess::spawn(request), now + seconds_to_duration(timeout_s_)});
    } catch (const std::exception& e) {  // a system_error, or the output directory
      spdlog::warn("job {} checkpoint {} not deleted: {}", next.job_id, next.uri, e.what());
    }
  }
}

void RetentionCommand::finish(const Run& run, const ExitStatus& status) const {
  if (!status.signaled && status.code == 0) {
    spdlog::info("job {} checkpoint {} deleted: beyond max_count", run.deletion.job_id, run.deletion.uri);
    return;
  }
  const std::string how = status.signaled ? "signal " + std::to_string(status.signal) : "exit " + std::to_string(status.code);
  spdlog::warn("job {} checkpoint {} not deleted: {} ended with {}: {}", run.deletion.job_id, run.deletion.uri, argv_.front(), how,
               file_tail((output_dir_ / "checkpoint-retention.err").string(), 512));
}

}  // namespace ojs::worker
