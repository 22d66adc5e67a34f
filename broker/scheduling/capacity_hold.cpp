// Capacity holds: the stored form, and whether the job held for still waits.
#include "broker/scheduling/capacity_hold.hpp"

#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

json CapacityHold::to_json() const {
  json v = json::array();
  for (const auto& victim : victims) v.push_back({{"job_id", victim.job_id}, {"gpus", victim.gpus}, {"devices", victim.devices}});
  json out = {{"for_job", for_job}, {"queue", queue}, {"class", class_id}, {"class_rank", class_rank}, {"victims", v}, {"until_ms", until_ms}};
  if (backfill_start_ms > 0) out["backfill_start_ms"] = backfill_start_ms;
  if (gpus > 0) out["gpus"] = gpus;
  return out;
}

std::optional<CapacityHold> CapacityHold::parse(const std::string& worker_id, const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  CapacityHold h;
  h.worker_id = worker_id;
  h.for_job = j.value("for_job", "");
  h.queue = j.value("queue", "");
  h.class_id = j.value("class", "");
  h.class_rank = j.value("class_rank", 0);
  h.until_ms = j.value("until_ms", std::int64_t{0});
  h.backfill_start_ms = j.value("backfill_start_ms", std::int64_t{0});
  h.gpus = j.value("gpus", 0);
  for (const auto& v : j.value("victims", json::array())) {
    RunningJob r;
    r.job_id = v.value("job_id", "");
    r.gpus = v.value("gpus", 0);
    r.devices = v.value("devices", std::vector<int>{});
    h.victims.push_back(std::move(r));
  }
  return h;
}

bool hold_still_wanted(JobReads& jobs, const CapacityHold& hold) {
  const auto job = jobs.get(hold.queue, hold.for_job);
  return job && job->state() == "available";
}

}  // namespace ojs::broker
