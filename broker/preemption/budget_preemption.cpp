// Preemption for budget: capacity exists but the queue's GPU or TPU budget is held by
// lower-class preemptible jobs (leader only). Members of elastic gangs above their
// minimum leave first, each giving back its own GPUs; whole jobs go only when that
// is not enough.
#include <spdlog/spdlog.h>

#include "broker/preemption/preemption.hpp"
#include "broker/preemption/running_jobs.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

QueueBudget PreemptionController::budget_of(const std::string& queue) { return queue_budget(queues_.budget(queue)); }

std::vector<RunningJob> PreemptionController::charged_in(const std::string& queue, std::vector<RunningJob>* members) {
  const auto active = jobs_.active_jobs(queue);
  std::vector<RunningJob> out;
  if (active.empty()) return out;
  std::vector<std::pair<std::string, std::string>> wanted;
  for (const auto& [id, _] : active) wanted.emplace_back(queue, id);
  const auto now = now_ms();
  for (const auto& found : jobs_.get_many(wanted)) {
    if (!found || found->state() != "active") continue;
    const JobRecord& job = *found;
    RunningJob r = running_job_from(job, queue, now);
    r.gpus = static_cast<int>(job.get_int("charged_gpus").value_or(0));
    r.gpu_mem_mb = job.get_int("charged_gpu_mem_mb").value_or(0);
    r.borrowed_gpus = static_cast<int>(job.get_int("borrowed_gpus").value_or(0));
    r.tpu_chips = static_cast<int>(job.get_int("charged_tpu_chips").value_or(0));
    if (members)
      for (auto& m : gang_members_charged(job, r)) members->push_back(std::move(m));
    out.push_back(std::move(r));
  }
  return out;
}

bool PreemptionController::preempt_for_budget(const std::string& queue, const std::string& preemptor, int rank,
                                              const BudgetCharge& charge, const VictimFilter& allowed) {
  const QueueBudget budget = budget_of(queue);
  if (budget.allows(charge)) return false;
  std::vector<RunningJob> members;
  const auto charged = charged_in(queue, &members);
  const auto choice = choose_budget_preemption(charge, rank, budget, charged, members, allowed);
  if (!choice || !mark(preemptor, choice->victims)) return false;
  std::string ids;
  for (const auto& v : choice->victims) ids += (ids.empty() ? "" : ", ") + v.job_id + (v.leaves ? " (member on " + v.worker_id + " leaves)" : "");
  spdlog::info("queue {}: preempting {} to free budget for job {} (class rank {})", queue, ids, preemptor, rank);
  return true;
}

}  // namespace ojs::broker
