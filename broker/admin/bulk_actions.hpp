// Admin bulk operations (ojs-admin-api.md §8): retry, cancel or delete the jobs
// of a queue that match a filter, one transition script per job, with a summary
// {action, matched, succeeded, failed, errors[{job_id, error}]}. Jobs are found
// through the indexes job_listing reads, so only indexed states can be matched.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "broker/admin/sources.hpp"

namespace ojs::broker::admin {

struct BulkRequest {
  std::string action;  // retry | cancel | delete
  std::string queue;
  std::string state;   // an indexed state (job_listing); retry and delete: dead
  std::string type;    // exact job type, or a prefix ending in '*'; empty: any
  int limit = 1000;    // jobs matched per call at most
};

// Validates {filter{queue, state?, type?}, confirm: true, limit?}; OjsError 400 names the field.
BulkRequest parse_bulk_request(const std::string& action, const nlohmann::json& body);
nlohmann::json run_bulk(BulkSources& s, const BulkRequest& request);

}  // namespace ojs::broker::admin
