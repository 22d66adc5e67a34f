// The job directives of heartbeat and FETCH replies: preempt, cancel and kill.
#include <algorithm>

#include "broker/preemption/preemption.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

json preemption_directives(const std::vector<PreemptionMarkView>& marks) {
  json out = json::array();
  const auto now = now_ms();
  for (const auto& m : marks) {
    if (m.action != "preempt") {  // cancel: SIGTERM, the job's own grace, SIGKILL; kill: SIGKILL now
      out.push_back({{"job_id", m.job_id}, {"action", m.action}});
      continue;
    }
    const auto remaining_s = std::max<std::int64_t>(0, (m.deadline_ms - now + 999) / 1000);
    out.push_back({{"job_id", m.job_id},
                   {"action", "preempt"},
                   {"grace_period_s", remaining_s},
                   {"checkpoint", m.checkpoint},
                   {"deadline", format_rfc3339(m.deadline_ms)},
                   {"preempted_for", m.preempted_for}});
  }
  return out;
}

}  // namespace ojs::broker
