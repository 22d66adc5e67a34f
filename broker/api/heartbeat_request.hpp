// The job ids a heartbeat reports, in either shape the OJS documents use:
// the HTTP binding's `"active_jobs": ["id", ...]`, or the worker protocol's
// (section 4.2) `"active_jobs": 2, "active_job_ids": ["id", "id"]` that the
// official SDK workers send. A single `job_id` is accepted too.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ojs::broker {

// Throws 400 invalid_request naming the field and the rule on a malformed body.
std::vector<std::string> heartbeat_job_ids(const nlohmann::json& body);
// Whether the body lists the jobs the worker runs (`active_jobs` or `active_job_ids`
// as an array, possibly empty): then a job it holds and omits is one it no longer runs.
bool lists_running_jobs(const nlohmann::json& body);

// Which run of the worker process sends a FETCH or heartbeat: the worker
// protocol's `started_at` (RFC 3339), `hostname` and `pid` (section 4.2), those
// present, joined; "" when none is. A terminate directive ends with the
// incarnation it reached (WorkerRegistry::contact). Throws 400 on a malformed one.
std::string worker_incarnation(const nlohmann::json& body);

}  // namespace ojs::broker
