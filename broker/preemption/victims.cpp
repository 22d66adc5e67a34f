#include "broker/preemption/victims.hpp"

#include <algorithm>
#include <functional>
#include <map>

namespace ojs::broker {

ml::WorkerLoad load_without(const std::vector<RunningJob>& running, const std::set<std::string>& removed,
                            const std::vector<int>& drained) {
  ml::WorkerLoad load;
  for (const auto& job : running) {
    if (removed.count(job.job_id)) continue;
    load.active.push_back({job.job_id, job.gpus, job.labels, job.anti_affinity, job.gpu_memory_gb, job.cpu_cores, job.memory_gb,
                           job.tpu_chips});
    load.hold(job.devices, job.gpu_memory_gb);
  }
  load.drain(drained);
  return load;
}

namespace {

// Lower-class, preemptible jobs not already leaving (and `allowed`): members that
// leave an elastic gang with a member to spare first, then least progress lost first.
std::vector<const RunningJob*> candidates_for(int preemptor_rank, const std::vector<RunningJob>& running, const VictimFilter& allowed) {
  std::vector<const RunningJob*> candidates;
  for (const auto& job : running) {
    if (job.preempting || !job.preemptible || job.class_rank >= preemptor_rank || (allowed && !allowed(job))) continue;
    if (job.leaves && job.gang_spare <= 0) continue;  // the gang is at its minimum
    candidates.push_back(&job);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const RunningJob* a, const RunningJob* b) {
    if (a->leaves != b->leaves) return a->leaves;
    if (a->lost_ms != b->lost_ms) return a->lost_ms < b->lost_ms;
    if (a->class_rank != b->class_rank) return a->class_rank < b->class_rank;
    return a->job_id < b->job_id;
  });
  return candidates;
}

// Takes candidates in order until `fits(removed)`, then drops those that turn
// out unnecessary (most progress lost first). nullopt when even all do not do.
std::optional<std::vector<const RunningJob*>> minimal_victims(const std::vector<const RunningJob*>& candidates,
                                                              std::set<std::string>& removed,
                                                              const std::function<bool(const std::set<std::string>&)>& fits) {
  std::vector<const RunningJob*> chosen;
  bool fit = false;
  for (const auto* c : candidates) {
    chosen.push_back(c);
    removed.insert(c->job_id);
    if (fits(removed)) {
      fit = true;
      break;
    }
  }
  if (!fit) return std::nullopt;
  for (auto it = chosen.rbegin(); it != chosen.rend();) {
    removed.erase((*it)->job_id);
    if (fits(removed)) {
      it = decltype(it)(chosen.erase(std::next(it).base()));
    } else {
      removed.insert((*it)->job_id);
      ++it;
    }
  }
  return chosen;
}

// minimal_victims, sparing young jobs (under their minimum run time) when the
// others alone free enough.
std::optional<std::vector<const RunningJob*>> victims_sparing_young(const std::vector<const RunningJob*>& candidates,
                                                                    std::set<std::string>& removed,
                                                                    const std::function<bool(const std::set<std::string>&)>& fits) {
  std::vector<const RunningJob*> mature;
  for (const auto* c : candidates)
    if (!c->young) mature.push_back(c);
  if (mature.size() < candidates.size()) {
    auto without = removed;
    if (auto chosen = minimal_victims(mature, without, fits)) {
      removed = std::move(without);
      return chosen;
    }
  }
  return minimal_victims(candidates, removed, fits);
}

VictimChoice to_choice(const std::vector<const RunningJob*>& chosen) {
  VictimChoice choice;
  for (const auto* c : chosen) {
    choice.victims.push_back(*c);
    choice.lost_ms += c->lost_ms;
  }
  return choice;
}

}  // namespace

std::optional<VictimChoice> choose_victims(const ml::Requirements& preemptor, int preemptor_rank,
                                           const ml::Capabilities& caps, const std::vector<RunningJob>& running,
                                           const ml::AssignmentOptions& assignment, const std::vector<int>& drained,
                                           const VictimFilter& allowed) {
  if (!ml::fits_static(preemptor, &caps)) return std::nullopt;  // static refusals: preemption cannot help
  std::set<std::string> removed;  // jobs already preempting count as gone
  for (const auto& job : running)
    if (job.preempting) removed.insert(job.job_id);
  auto judge = [&](const std::set<std::string>& without) {
    return ml::judge(preemptor, &caps, load_without(running, without, drained), assignment);
  };
  if (judge(removed).eligible()) return std::nullopt;
  auto chosen = victims_sparing_young(candidates_for(preemptor_rank, running, allowed), removed,
                                [&](const std::set<std::string>& without) { return judge(without).eligible(); });
  if (!chosen) return std::nullopt;
  VictimChoice choice = to_choice(*chosen);
  choice.fit = judge(removed);
  return choice;
}

std::optional<VictimChoice> choose_budget_victims(int preemptor_gpus, int preemptor_rank, const QueueBudget& budget,
                                                  const std::vector<RunningJob>& running, long long preemptor_mem_mb,
                                                  const VictimFilter& allowed) {
  if (preemptor_gpus <= 0) return std::nullopt;
  return choose_budget_victims(BudgetCharge{preemptor_gpus, 1, preemptor_mem_mb}, preemptor_rank, budget, running, allowed);
}

std::optional<VictimChoice> choose_budget_victims(const BudgetCharge& preemptor, int preemptor_rank, const QueueBudget& budget,
                                                  const std::vector<RunningJob>& running, const VictimFilter& allowed) {
  const bool tpu = preemptor.gpus <= 0 && preemptor.tpu_chips > 0;  // held to the TPU limit only (QueueBudget::blocking)
  if (preemptor.gpus <= 0 && !tpu) return std::nullopt;
  auto allows = [&](const std::set<std::string>& without) {
    BudgetCharge freed;
    for (const auto& job : running) {
      if (!without.count(job.job_id)) continue;
      if (job.gpus > 0) {
        freed.gpus += job.gpus;
        ++freed.jobs;
        freed.gpu_mem_mb += job.gpu_mem_mb;
      }
      freed.tpu_chips += job.tpu_chips;
    }
    return budget.allows(preemptor, freed);
  };
  std::set<std::string> removed;  // jobs already preempting are on their way out
  for (const auto& job : running)
    if (job.preempting) removed.insert(job.job_id);
  if (allows(removed)) return std::nullopt;  // the budget is not (or soon not) the obstacle
  std::vector<const RunningJob*> candidates;
  for (const auto* c : candidates_for(preemptor_rank, running, allowed))
    if (tpu ? c->tpu_chips > 0 : c->gpus > 0) candidates.push_back(c);  // only jobs charged what binds it free any of it
  auto chosen = victims_sparing_young(candidates, removed, allows);
  if (!chosen) return std::nullopt;
  return to_choice(*chosen);
}

namespace {

// What a job (whole: its GPU job too) or a leaving member gives back to the budget.
void add_freed(BudgetCharge& freed, const RunningJob& r, bool whole) {
  freed.gpus += r.gpus;
  freed.gpu_mem_mb += r.gpu_mem_mb;
  freed.tpu_chips += whole ? r.tpu_chips : 0;
  if (whole && r.gpus > 0) ++freed.jobs;
}

}  // namespace

BudgetCharge freed_on_the_way_out(const std::vector<RunningJob>& charged, const std::vector<RunningJob>& members) {
  BudgetCharge freed;
  for (const auto& job : charged)
    if (job.preempting) add_freed(freed, job, true);
  for (const auto& m : members)
    if (m.preempting) add_freed(freed, m, false);
  return freed;
}

std::optional<VictimChoice> choose_budget_leavers(const BudgetCharge& preemptor, int preemptor_rank, const QueueBudget& budget,
                                                  const std::vector<RunningJob>& charged, const std::vector<RunningJob>& members,
                                                  const VictimFilter& allowed) {
  if (preemptor.gpus <= 0 || members.empty()) return std::nullopt;
  BudgetCharge freed = freed_on_the_way_out(charged, members);
  const auto frees = [&](const RunningJob& r, bool whole) { add_freed(freed, r, whole); };
  if (budget.allows(preemptor, freed)) return std::nullopt;  // the budget is not (or soon not) the obstacle
  std::vector<const RunningJob*> chosen;
  std::map<std::string, int> taken;  // members leaving each gang in this choice
  for (const auto* c : candidates_for(preemptor_rank, members, allowed)) {
    if (!c->leaves || c->gpus <= 0) continue;
    if (++taken[c->job_id] > c->gang_spare) continue;  // the gang is at its minimum
    chosen.push_back(c);
    frees(*c, false);
    if (budget.allows(preemptor, freed)) return to_choice(chosen);
  }
  return std::nullopt;
}

std::optional<VictimChoice> choose_budget_preemption(const BudgetCharge& preemptor, int preemptor_rank, const QueueBudget& budget,
                                                     const std::vector<RunningJob>& charged, const std::vector<RunningJob>& members,
                                                     const VictimFilter& allowed) {
  if (budget.allows(preemptor, freed_on_the_way_out(charged, members))) return std::nullopt;
  if (auto leavers = choose_budget_leavers(preemptor, preemptor_rank, budget, charged, members, allowed)) return leavers;
  return choose_budget_victims(preemptor, preemptor_rank, budget, charged, allowed);
}

std::optional<VictimChoice> choose_reclaim_victims(long long gpus, const std::vector<RunningJob>& running) {
  if (gpus <= 0) return std::nullopt;
  std::vector<const RunningJob*> candidates;
  for (const auto& job : running)
    if (!job.preempting && job.gpus > 0 && (job.borrowed_gpus > 0 || job.preemptible)) candidates.push_back(&job);
  std::stable_sort(candidates.begin(), candidates.end(), [](const RunningJob* a, const RunningJob* b) {
    if ((a->borrowed_gpus > 0) != (b->borrowed_gpus > 0)) return a->borrowed_gpus > 0;
    if (a->class_rank != b->class_rank) return a->class_rank < b->class_rank;
    if (a->lost_ms != b->lost_ms) return a->lost_ms < b->lost_ms;
    return a->job_id < b->job_id;
  });
  std::set<std::string> removed;
  const auto frees_enough = [&](const std::set<std::string>& without) {
    long long freed = 0;
    for (const auto* c : candidates)
      if (without.count(c->job_id)) freed += c->gpus;
    return freed >= gpus;
  };
  auto chosen = victims_sparing_young(candidates, removed, frees_enough);
  if (!chosen) return std::nullopt;
  return to_choice(*chosen);
}

bool within_gang_spare(const std::vector<RunningJob>& victims, std::map<std::string, int>& taken) {
  auto after = taken;
  for (const auto& v : victims)
    if (v.leaves && ++after[v.job_id] > v.gang_spare) return false;
  taken = std::move(after);
  return true;
}

bool cheaper(const VictimChoice& a, const VictimChoice& b) {
  if (a.lost_ms != b.lost_ms) return a.lost_ms < b.lost_ms;
  return a.victims.size() < b.victims.size();
}

}  // namespace ojs::broker
