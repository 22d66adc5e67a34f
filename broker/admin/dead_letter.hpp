// The dead letter as the OJS API shows it (api/dead_letter_api.cpp, the admin
// job retry): a page across queues, retry and discard by id, each a store
// transition. Unknown ids are 404s naming the job.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "broker/jobs/job_service.hpp"

namespace ojs::broker::admin {

// {jobs[envelope], pagination{total, limit, offset}}, newest first per queue; all queues when `only` is empty.
nlohmann::json dead_letter_page(JobService& jobs, const std::string& only, int offset, int limit);
// Back to available with its attempts reset; 404 when the job is unknown or not dead.
nlohmann::json retry_dead(JobService& jobs, const std::string& id);
// Deleted for good (the job and its directory entry); 404 as retry_dead.
void discard_dead(JobService& jobs, const std::string& id);
// The admin API's retry of any job (ojs-admin-api.md): 404 unknown, 409 naming its state when not dead.
nlohmann::json retry_job(JobService& jobs, const std::string& id);

}  // namespace ojs::broker::admin
