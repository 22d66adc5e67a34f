#include "broker/scheduling/preemption_pending_filter.hpp"

#include "ojs/core/time.hpp"

namespace ojs::broker {

ml::Refusal preemption_pending_refusal(const std::string& for_job, const std::vector<std::string>& victims,
                                       std::int64_t hold_until_ms) {
  std::string ids;
  for (const auto& v : victims) ids += (ids.empty() ? "" : ", ") + v;
  ml::Refusal r;
  r.predicate = "preemption_pending";
  r.code = ml::VerdictCode::preemptible;
  r.reason = "is preempting " + ids + " for job " + for_job + " (grace period); the GPUs they free are held for it until " +
             format_rfc3339(hold_until_ms);
  r.summary = "preempt lower-class jobs for it (grace period running)";
  r.facts = {{"for_job", for_job}, {"victims", ids}, {"hold_until", format_rfc3339(hold_until_ms)}};
  return r;
}

}  // namespace ojs::broker
