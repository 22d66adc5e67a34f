// The per-job directory: working directory of the process and home of the
// files the job exchanges with the agent.
#pragma once
#include "worker/execution/job_view.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace ojs::worker {

struct JobWorkspace {
  std::filesystem::path dir;              // <work_dir>/<job id>-<attempt>, the job's cwd
  std::filesystem::path job_file;         // the job JSON ($OJS_JOB_FILE, also stdin)
  std::filesystem::path stdout_file;
  std::filesystem::path stderr_file;
  std::filesystem::path checkpoint_file;  // the job writes checkpoint metadata here
  std::filesystem::path preempt_file;     // the agent writes the grace period here on preemption

  // Creates the directory (replacing a stale one) and writes the job file. Throws on I/O errors.
  static JobWorkspace create(const std::filesystem::path& work_dir, const JobView& view, const nlohmann::json& job);
  // The same job started again here (an elastic gang resized): the job file
  // rewritten, the committed checkpoint file and the stop notice removed; what else
  // the job keeps in its directory stays. Throws on I/O errors.
  void reuse(const nlohmann::json& job) const;
  void remove() const;
};

}  // namespace ojs::worker
