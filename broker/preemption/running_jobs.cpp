// Active jobs as preemption sees them.
#include "broker/preemption/running_jobs.hpp"

#include <algorithm>
#include <optional>

#include "broker/preemption/backfill.hpp"
#include "broker/preemption/preemption.hpp"
#include "broker/workers/liveness.hpp"

namespace ojs::broker {

using nlohmann::json;

QueueBudget queue_budget(const BudgetUse& use) { return QueueBudget(use); }

std::optional<ml::Requirements> requirements_of(const JobRecord& job) {
  const auto doc = job.document();
  if (!doc.is_object()) return std::nullopt;
  try {
    return ml::parse_requirements(doc);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// What preemption needs to know of an active job (gpus/devices/labels are filled
// by the caller from where it found the job).
RunningJob running_job_from(const JobRecord& job, const std::string& queue, std::int64_t now) {
  RunningJob r;
  r.job_id = job.id();
  r.queue = queue;
  r.worker_id = job.get("worker_id");
  r.tenant = job.get("tenant");  // for the fair tenant order's share rule
  r.class_rank = job.priority_class_rank();
  r.preempting = job.has("preempt_deadline") || job.has("stop_action");  // on its way out (cancelled: stopping)
  if (auto req = requirements_of(job)) {
    r.preemptible = req->scheduling.preemptible;
    r.grace_period_s = req->scheduling.grace_period_s;
    if (const auto min_s = req->scheduling.min_runtime_before_preempt_s) {
      r.young_until_ms = job.get_int("started_at").value_or(now) + static_cast<std::int64_t>(*min_s) * 1000;
      r.young = now < r.young_until_ms;
    }
    r.checkpoint_on_preempt = req->scheduling.checkpoint.on_preempt;
    r.declared_end_ms = declared_end(job.get_int("started_at").value_or(now), req->scheduling.estimated_duration_seconds,
                                     job.get_int("execution_deadline"));  // backfill plans by it
  }
  const auto since = std::max(job.get_int("started_at").value_or(now), job.get_int("last_checkpoint_at").value_or(0));
  r.lost_ms = std::max<std::int64_t>(0, now - since);
  return r;
}

namespace {

// A gang's membership as its job records it: its members' workers by rank, those told
// to leave, its minimum, and whether it may shrink (a running elastic gang, no rank
// ACKed). nullopt for a job with no members.
struct GangMembership {
  std::vector<std::string> workers;  // worker ids, rank order
  nlohmann::json leaving;  // object keyed by worker id (gang_leave.lua)
  int gone = 0;            // members told to leave
  int min_size = 0;
  bool shrinkable = false;
  int members() const { return static_cast<int>(workers.size()); }
  int spare() const { return std::max(0, members() - gone - min_size); }  // members that may still leave
  bool told_to_leave(const std::string& worker_id) const { return leaving.is_object() && leaving.contains(worker_id); }
};

std::optional<GangMembership> membership_of(const JobRecord& job) {
  GangMembership g;
  g.workers = job.gang_workers();
  if (g.workers.empty()) return std::nullopt;
  g.leaving = nlohmann::json::parse(job.has("gang_leaving") ? job.get("gang_leaving") : "{}", nullptr, false);
  g.gone = g.leaving.is_object() ? static_cast<int>(g.leaving.size()) : 0;
  g.min_size = static_cast<int>(job.get_int("gang_size").value_or(g.members()));
  g.shrinkable = job.has("gang_max_size") && !job.has("gang_acked");
  return g;
}

// A gang member as preemption sees it on `worker_id`. A member of a running elastic
// gang above its minimum leaves alone (the gang shrinks); the one told to leave
// already is on its way out. Taking the whole gang instead loses every member's
// progress, so it weighs that much.
void describe_gang_member(RunningJob& r, const JobRecord& job, const std::string& worker_id) {
  const auto g = membership_of(job);
  if (!g) return;
  if (g->told_to_leave(worker_id)) r.preempting = true;
  const bool rank0 = g->workers[0] == worker_id;  // the rendezvous stays
  if (g->shrinkable) {
    r.gang_now = g->members() - g->gone;
    r.gang_min = g->min_size;
  }
  if (g->shrinkable && !rank0 && !r.preempting) {
    r.gang_spare = g->spare();
    r.leaves = r.gang_spare > 0;
  }
  if (!r.leaves) r.lost_ms *= g->members();
}

}  // namespace

std::vector<RunningJob> gang_members_charged(const JobRecord& job, const RunningJob& whole) {
  std::vector<RunningJob> out;
  const auto g = membership_of(job);
  if (!g || !g->shrinkable) return out;
  const auto members = nlohmann::json::parse(job.has("gang_members") ? job.get("gang_members") : "[]", nullptr, false);
  if (!members.is_array() || g->workers.size() != members.size()) return out;
  for (std::size_t rank = 1; rank < g->workers.size(); ++rank) {  // rank 0, the rendezvous, stays
    if (g->workers[rank].empty() || !members[rank].is_object()) continue;
    RunningJob m = whole;
    m.worker_id = g->workers[rank];
    const auto& gpus = members[rank].contains("gpus") ? members[rank]["gpus"] : nlohmann::json();
    m.gpus = gpus.is_number_integer() ? gpus.get<int>() : 0;
    m.gpu_mem_mb = whole.gpus > 0 ? whole.gpu_mem_mb * m.gpus / whole.gpus : 0;
    m.borrowed_gpus = 0;
    m.tpu_chips = 0;
    m.preempting = g->told_to_leave(m.worker_id);
    m.gang_spare = g->spare();
    m.leaves = !m.preempting && m.gang_spare > 0;
    if (m.preempting || m.leaves) out.push_back(std::move(m));
  }
  return out;
}

bool LiveWorker::serves(const std::string& queue) const {
  return info.queues.empty() || std::find(info.queues.begin(), info.queues.end(), queue) != info.queues.end();
}

std::vector<LiveWorker> live_workers(WorkerRegistry& workers, std::int64_t now, std::int64_t dead_after_ms) {
  std::vector<LiveWorker> live;
  for (auto& w : workers.list()) {
    if (w.state != "running" || worker_lost(w, now, dead_after_ms) || !w.capabilities.is_object()) continue;
    try {
      live.push_back({w, ml::parse_capabilities(w.capabilities)});
    } catch (const std::exception&) {
    }
  }
  return live;
}

std::vector<std::pair<RunningJob, JobRecord>> running_records_on(JobReads& store, WorkerRegistry& workers,
                                                                 const std::string& worker_id, std::int64_t now) {
  std::vector<std::pair<RunningJob, JobRecord>> out;
  const auto held = workers.held_ids(worker_id);
  if (held.empty()) return out;
  std::vector<std::pair<std::string, std::string>> wanted;
  for (const auto& h : held) wanted.emplace_back(h.queue, h.id);
  auto jobs = store.get_many(wanted);
  for (std::size_t i = 0; i < held.size(); ++i) {
    if (!jobs[i] || jobs[i]->state() != "active") continue;  // a forming gang's member runs nothing yet
    // A gang member's worker runs the gang's job too: preempting it takes the whole
    // gang down, unless it is a member that may leave an elastic gang.
    const auto load = jobs[i]->load_on(worker_id);
    if (!load) continue;
    RunningJob r = running_job_from(*jobs[i], held[i].queue, now);
    r.worker_id = worker_id;
    if (jobs[i]->has("gang_workers")) describe_gang_member(r, *jobs[i], worker_id);
    r.gpus = load->gpus;
    r.devices = load->devices;
    r.labels = load->labels;
    r.anti_affinity = load->anti_affinity;
    r.gpu_memory_gb = load->demand.gpu_memory_gb;
    r.cpu_cores = load->demand.cpu_cores;
    r.memory_gb = load->demand.memory_gb;
    r.tpu_chips = load->demand.tpu_chips;
    out.emplace_back(std::move(r), std::move(*jobs[i]));
  }
  return out;
}

}  // namespace ojs::broker
