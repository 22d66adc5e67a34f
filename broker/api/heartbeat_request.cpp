#include "broker/api/heartbeat_request.hpp"

#include <algorithm>

#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {

void append_ids(const nlohmann::json& list, const char* field, std::vector<std::string>& ids) {
  if (!list.is_array()) throw invalid_field(field, "must be an array of job ids");
  for (const auto& id : list) {
    if (!id.is_string() || id.get<std::string>().empty()) throw invalid_field(field, "must be an array of job ids");
    ids.push_back(id.get<std::string>());
  }
}

}  // namespace

bool lists_running_jobs(const nlohmann::json& body) {
  return (body.contains("active_jobs") && body["active_jobs"].is_array()) ||
         (body.contains("active_job_ids") && body["active_job_ids"].is_array());
}

std::vector<std::string> heartbeat_job_ids(const nlohmann::json& body) {
  std::vector<std::string> ids;
  if (body.contains("active_jobs")) {
    const auto& active = body["active_jobs"];
    if (active.is_number_integer()) {
      // Worker protocol: a count, with the ids in active_job_ids (REQUIRED there).
      if (active.get<long long>() < 0) throw invalid_field("active_jobs", "must be an integer >= 0 or an array of job ids");
      if (!body.contains("active_job_ids"))
        throw invalid_field("active_job_ids", "is required when active_jobs is a count (worker protocol section 4.2)");
    } else if (active.is_array()) {
      append_ids(active, "active_jobs", ids);
    } else {
      throw invalid_field("active_jobs", "must be an integer >= 0 or an array of job ids");
    }
  }
  if (body.contains("active_job_ids")) append_ids(body["active_job_ids"], "active_job_ids", ids);
  if (body.contains("job_id")) {
    if (!body["job_id"].is_string() || body["job_id"].get<std::string>().empty())
      throw invalid_field("job_id", "must be a non-empty string");
    ids.push_back(body["job_id"].get<std::string>());
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string worker_incarnation(const nlohmann::json& body) {
  std::string out;
  if (body.contains("started_at")) {
    const auto& v = body["started_at"];
    if (!v.is_string() || !parse_rfc3339(v.get<std::string>())) throw invalid_field("started_at", "must be an RFC 3339 timestamp");
    out += v.get<std::string>();
  }
  out += '|';
  if (body.contains("hostname")) {
    const auto& v = body["hostname"];
    if (!v.is_string() || v.get<std::string>().size() > 255) throw invalid_field("hostname", "must be a string of at most 255 characters");
    out += v.get<std::string>();
  }
  out += '|';
  if (body.contains("pid")) {
    const auto& v = body["pid"];
    if (!v.is_number_integer() || v.get<long long>() < 1) throw invalid_field("pid", "must be an integer >= 1");
    out += std::to_string(v.get<long long>());
  }
  return out == "||" ? std::string() : out;
}

}  // namespace ojs::broker
