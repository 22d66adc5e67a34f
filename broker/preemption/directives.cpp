// The preempt directives of heartbeat and FETCH replies.
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
