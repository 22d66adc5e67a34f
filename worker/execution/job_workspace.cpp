#include "worker/execution/job_workspace.hpp"

#include "worker/config/json_file.hpp"

namespace ojs::worker {

namespace fs = std::filesystem;

JobWorkspace JobWorkspace::create(const fs::path& work_dir, const JobView& view, const nlohmann::json& job) {
  JobWorkspace ws;
  ws.dir = fs::absolute(work_dir) / (view.id + "-" + std::to_string(view.attempt));
  fs::remove_all(ws.dir);
  fs::create_directories(ws.dir);
  ws.job_file = ws.dir / "job.json";
  ws.stdout_file = ws.dir / "stdout.log";
  ws.stderr_file = ws.dir / "stderr.log";
  ws.checkpoint_file = ws.dir / "checkpoint.json";
  ws.preempt_file = ws.dir / "preempt";
  write_text_file_atomically(ws.job_file.string(), job.dump());
  return ws;
}

void JobWorkspace::reuse(const nlohmann::json& job) const {
  write_text_file_atomically(job_file.string(), job.dump());
  fs::remove(checkpoint_file);  // committed: the next run reads it from $OJS_LAST_CHECKPOINT
  fs::remove(preempt_file);
}

void JobWorkspace::remove() const {
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

}  // namespace ojs::worker
