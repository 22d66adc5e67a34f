// Job progress (spec/ojs-progress.md): workers report a value in [0, 1] (clamped)
// and/or a data object for an active job; it doubles as a heartbeat for that job.
// Reads come from the job record (INFO shows progress, progress_data, progress_updated_at).
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "broker/jobs/job_service.hpp"
#include "broker/store/job_directory.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/progress_store.hpp"

namespace ojs::broker {

// body: {progress?, data?, message?, worker_id?} (at least progress or data or message).
// Returns {job_id, state, progress, accepted, reason?}: updates for jobs that are not
// active are accepted and ignored (accepted: false), as the spec says. 404 unknown job.
// What progress reports and reads use (wired in app.cpp).
struct ProgressSources {
  JobDirectory& directory;
  JobReads& reads;
  ProgressStore& progress;
};

nlohmann::json report_progress(ProgressSources& s, const std::string& job_id, const nlohmann::json& body,
                               std::int64_t default_visibility_ms);
// {job_id, state, progress|null, data|null, updated_at|null}
nlohmann::json read_progress(ProgressSources& s, const std::string& job_id);

}  // namespace ojs::broker
