// The controller's cohort pass (leader only): each cohort member's share of the
// cohort's GPUs (scheduling/cohort_shares.cpp decides), written where the claim
// reads its budget, and the reclaim of GPUs a member holds above its share:
// its borrowing jobs are preempted with their grace period and checkpoint, and
// resume later from it, as any preempted job.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "broker/preemption/preemption.hpp"
#include "broker/scheduling/cohort_shares.hpp"
#include "ojs/ml/requirement_class.hpp"

namespace ojs::broker {

long long PreemptionController::waiting_gpus(const std::string& queue) {
  const ClassSet classes = queues_.load_classes(queue);
  long long gpus = 0;
  for (const auto& [id, count] : queues_.ready_counts(queue, classes)) {
    if (count <= 0) continue;
    try {
      // A gang waits for every member's GPUs.
      const auto req = ml::requirements_from_class_json(nlohmann::json::parse(classes.classes.at(id)));
      gpus += count * req.gpu_count() * std::max(1, req.hard.gang.size);
    } catch (const std::exception&) {
      // A class that no longer parses asks for nothing here; the claim reports it.
    }
  }
  return gpus;
}

int PreemptionController::balance_cohorts(const std::vector<std::string>& queues) {
  // A member is listed from its first config write (queue_config_store.cpp), job or no job.
  const auto settings = cohorts_.read(queues);
  std::map<std::string, std::vector<const CohortSettings*>> members_of;
  long long epoch = 0;
  const auto pass_epoch = [&] { return epoch ? epoch : (epoch = cohorts_.next_epoch()); };
  for (const auto& s : settings) {
    if (!s.cohort.empty() && s.budget.nominal_gpus) members_of[s.cohort].push_back(&s);
    else if (s.budget.cohort_gpus) cohorts_.set_share(s.queue, pass_epoch(), std::nullopt);  // it left its cohort
  }
  int started = 0;
  for (const auto& [cohort, members] : members_of) {
    std::vector<CohortMember> in;
    for (const auto* s : members)
      in.push_back({s->queue, *s->budget.nominal_gpus, s->borrowing_limit, s->lending_limit, s->budget.gpus_in_use,
                    waiting_gpus(s->queue), s->budget.max_gpus.value_or(0)});
    const auto shares = cohort_shares(in);
    for (std::size_t i = 0; i < shares.size(); ++i) {
      const auto& share = shares[i];
      // Every member is written under this pass's epoch, so that a controller that
      // lost its lease mid-pass cannot raise a share this pass lowered.
      if (!cohorts_.set_share(share.queue, pass_epoch(), share.limit)) continue;
      if (share.limit != in[i].limit_now)
        spdlog::info("cohort {}: queue {} may hold {} GPUs (nominal {}, lent {}, borrowed {})", cohort, share.queue, share.limit,
                     in[i].nominal, share.lent, share.borrowed);
      if (share.reclaim <= 0) continue;
      const auto running = charged_in(share.queue);
      long long leaving = 0;
      for (const auto& r : running)
        if (r.preempting) leaving += r.gpus;
      const auto choice = choose_reclaim_victims(share.reclaim - leaving, running);
      if (!choice || !mark("cohort:" + cohort, choice->victims)) continue;
      std::string ids;
      for (const auto& v : choice->victims) ids += (ids.empty() ? "" : ", ") + v.job_id;
      spdlog::info("cohort {}: reclaiming {} GPUs from queue {}: preempting {}", cohort, share.reclaim - leaving, share.queue, ids);
      started += static_cast<int>(choice->victims.size());
    }
  }
  return started;
}

}  // namespace ojs::broker
