#include "broker/admin/bulk_actions.hpp"

#include "broker/admin/job_listing.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker::admin {

using nlohmann::json;

namespace {


std::string string_member(const json& filter, const char* name, const std::string& fallback) {
  if (!filter.contains(name)) return fallback;
  if (!filter[name].is_string() || filter[name].get<std::string>().empty())
    throw invalid_field(std::string("filter.") + name, "must be a non-empty string");
  return filter[name].get<std::string>();
}

// One job: the transition the action names. Throws OjsError when the job refuses it.
void apply(BulkSources& s, const BulkRequest& request, const std::string& id) {
  if (request.action == "cancel") {
    s.jobs.cancel(id);
    return;
  }
  const auto t = s.dead.act(request.queue, id, request.action == "retry" ? "retry" : "discard");
  if (t.status != TransitionStatus::ok)
    throw OjsError(ErrorCode::conflict, "job " + id + " is no longer in the dead letter queue", {{"job_id", id}});
  if (request.action == "delete") s.directory.forget(id);
}

}  // namespace

BulkRequest parse_bulk_request(const std::string& action, const json& body) {
  if (action != "retry" && action != "cancel" && action != "delete")
    throw OjsError(ErrorCode::not_found, "no bulk action '" + action + "' (retry, cancel, delete)", {{"action", action}});
  if (!body.contains("confirm") || body["confirm"] != true)
    throw invalid_field("confirm", "must be true: bulk operations change many jobs at once");
  if (!body.contains("filter") || !body["filter"].is_object()) throw invalid_field("filter", "is required: an object with at least queue");
  const json& filter = body["filter"];
  for (auto it = filter.begin(); it != filter.end(); ++it)
    if (it.key() != "queue" && it.key() != "state" && it.key() != "type")
      throw invalid_field("filter." + it.key(), "is not supported (queue, state, type)");
  BulkRequest r;
  r.action = action;
  if (!filter.contains("queue")) throw invalid_field("filter.queue", "is required: jobs are indexed per queue");
  r.queue = string_member(filter, "queue", "");
  if (!is_valid_queue_name(r.queue)) throw invalid_field("filter.queue", "must match ^[a-z0-9][a-z0-9.-]*$");
  // The spec's "discarded" filter means the dead letter here: the only discarded jobs kept indexed.
  r.state = string_member(filter, "state", action == "cancel" ? "available" : "dead");
  if (r.state == "discarded") r.state = "dead";
  if (action != "cancel" && r.state != "dead")
    throw invalid_field("filter.state", action + " applies to dead-letter jobs only (state dead or discarded)");
  if (action == "cancel" && (!is_listable_state(r.state) || r.state == "dead" || is_finished_state(r.state)))
    throw invalid_field("filter.state", "cancel applies to available, active, scheduled or retryable jobs");
  r.type = string_member(filter, "type", "");
  if (body.contains("limit")) {
    if (!body["limit"].is_number_integer() || body["limit"].get<long long>() < 1 || body["limit"].get<long long>() > 1000)
      throw invalid_field("limit", "must be an integer between 1 and 1000");
    r.limit = body["limit"].get<int>();
  }
  return r;
}

json run_bulk(BulkSources& s, const BulkRequest& request) {
  const json listed = list_jobs(s.listing, request.queue, request.state, request.limit);
  int matched = 0, succeeded = 0;
  json errors = json::array();
  for (const auto& job : listed["jobs"]) {
    if (!type_matches(request.type, job.value("type", ""))) continue;
    ++matched;
    const auto id = job["id"].get<std::string>();
    try {
      apply(s, request, id);
      ++succeeded;
    } catch (const OjsError& e) {
      errors.push_back({{"job_id", id}, {"error", e.what()}});
    }
  }
  return {{"action", request.action}, {"queue", request.queue}, {"state", request.state}, {"matched", matched},
          {"succeeded", succeeded}, {"failed", matched - succeeded}, {"errors", errors}};
}

}  // namespace ojs::broker::admin
