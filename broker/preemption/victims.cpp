#include "broker/preemption/victims.hpp"

#include <algorithm>

namespace ojs::broker {

ml::WorkerLoad load_without(const std::vector<RunningJob>& running, const std::set<std::string>& removed) {
  ml::WorkerLoad load;
  for (const auto& job : running) {
    if (removed.count(job.job_id)) continue;
    load.active.push_back({job.job_id, job.gpus, job.labels});
    load.busy_devices.insert(job.devices.begin(), job.devices.end());
  }
  return load;
}

std::optional<VictimChoice> choose_victims(const ml::Requirements& preemptor, int preemptor_rank,
                                           const ml::Capabilities& caps, const std::vector<RunningJob>& running,
                                           const ml::AssignmentOptions& assignment) {
  if (!ml::fits_static(preemptor, &caps)) return std::nullopt;  // static refusals: preemption cannot help
  std::set<std::string> removed;  // jobs already preempting count as gone
  for (const auto& job : running)
    if (job.preempting) removed.insert(job.job_id);
  auto fits = [&](const std::set<std::string>& without) {
    return ml::judge(preemptor, &caps, load_without(running, without), assignment);
  };
  if (fits(removed).eligible()) return std::nullopt;

  std::vector<const RunningJob*> candidates;
  for (const auto& job : running)
    if (!job.preempting && job.preemptible && job.class_rank < preemptor_rank) candidates.push_back(&job);
  std::stable_sort(candidates.begin(), candidates.end(), [](const RunningJob* a, const RunningJob* b) {
    if (a->lost_ms != b->lost_ms) return a->lost_ms < b->lost_ms;
    if (a->class_rank != b->class_rank) return a->class_rank < b->class_rank;
    return a->job_id < b->job_id;
  });

  std::vector<const RunningJob*> chosen;
  bool fit = false;
  for (const auto* c : candidates) {
    chosen.push_back(c);
    removed.insert(c->job_id);
    if (fits(removed).eligible()) {
      fit = true;
      break;
    }
  }
  if (!fit) return std::nullopt;
  // Drop victims that turned out unnecessary (most progress lost first).
  for (auto it = chosen.rbegin(); it != chosen.rend();) {
    removed.erase((*it)->job_id);
    if (fits(removed).eligible()) {
      it = decltype(it)(chosen.erase(std::next(it).base()));
    } else {
      removed.insert((*it)->job_id);
      ++it;
    }
  }
  VictimChoice choice;
  for (const auto* c : chosen) {
    choice.victims.push_back(*c);
    choice.lost_ms += c->lost_ms;
  }
  choice.fit = fits(removed);
  return choice;
}

bool cheaper(const VictimChoice& a, const VictimChoice& b) {
  if (a.lost_ms != b.lost_ms) return a.lost_ms < b.lost_ms;
  return a.victims.size() < b.victims.size();
}

}  // namespace ojs::broker
