// GET /ojs/v1/events?types=a,b&queues=x,y&job_id=...&limit=N (newest first).
#include <map>

#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/events/event_log.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace {
std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    auto comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}
}  // namespace

void register_events_api(Router& router, ApiContext& ctx) {
  router.add("GET", "/ojs/v1/events", [&ctx](const HttpRequest& r) {
    EventQuery q;
    for (auto& t : split_csv(r.query_or("types", ""))) q.types.insert(t);
    q.queues = split_csv(r.query_or("queues", ""));
    q.job_id = r.query_or("job_id", "");
    try {
      q.limit = std::stoi(r.query_or("limit", "100"));
    } catch (...) {
      throw invalid_field("limit", "must be an integer between 1 and 1000");
    }
    if (q.limit < 1 || q.limit > 1000) throw invalid_field("limit", "must be an integer between 1 and 1000");
    nlohmann::json events = nlohmann::json::array();
    // A tenant-pinned token reads only events of its tenant's jobs.
    const auto scope = auth::tenant_scope();
    std::map<std::string, bool> visible;  // job id -> in scope, one lookup per job
    for (auto& e : list_events(ctx.store, q)) {
      if (!scope.empty()) {
        const auto subject = e.value("subject", std::string());
        auto it = visible.find(subject);
        if (it == visible.end()) it = visible.emplace(subject, ctx.jobs.tenant_of(subject).value_or("") == scope).first;
        if (!it->second) continue;
      }
      events.push_back(std::move(e));
    }
    return json_reply(200, {{"events", events}});
  });
}

}  // namespace ojs::broker
