// Jobs naming a reservation that never came are discarded after
// ext_ml_reservation_timeout_s (leader only).
#include "broker/preemption/preemption.hpp"
#include "broker/preemption/running_jobs.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

int PreemptionController::expire_reservation_waits(const std::string& queue) {
  auto& indexes = marks_;
  const auto now = now_ms();
  auto ids = indexes.due(queue, PreemptionStore::Index::reservation_waits, now);
  if (ids.empty()) return 0;
  const auto reservations = load_reservations(indexes);
  int n = 0;
  for (const auto& id : ids) {
    auto job = jobs_.get(queue, id);
    auto req = job ? requirements_of(*job) : std::nullopt;
    if (!req) {
      indexes.drop(queue, PreemptionStore::Index::reservation_waits, id);
      continue;
    }
    const auto& name = req->scheduling.reservation_id;
    auto it = reservations.find(name);
    if (it != reservations.end() && it->second.active(now)) {  // the reservation exists: keep waiting inside it
      indexes.drop(queue, PreemptionStore::Index::reservation_waits, id);
      continue;
    }
    const json error = {{"code", "reservation_unavailable"},
                        {"type", "reservation_unavailable"},
                        {"message", "reservation " + name + " does not exist or has expired; the job waited its ext_ml_reservation_timeout_s (" +
                                        std::to_string(req->scheduling.reservation_timeout_s.value_or(0)) + " s)"},
                        {"retryable", false},
                        {"occurred_at", format_rfc3339(now)}};
    if (indexes.discard_waiting(*job, error.dump()).status == TransitionStatus::ok) ++n;
  }
  return n;
}

}  // namespace ojs::broker
