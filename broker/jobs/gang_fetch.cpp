// FETCH of ext_ml_gang jobs (docs/matching.md "Gangs"): gang classes never
// go to claim.lua; the broker decides which gang the worker joins
// (scheduling/gang_decision.cpp) and claim_gang.lua holds the worker as a member of
// the queue's forming gang, starts the gang when its last member joins, delivers
// a started gang to each held member on its next FETCH, with its rank and the rendezvous,
// and adds the worker to a running elastic gang that grows.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "broker/jobs/fetch_service.hpp"
#include "broker/jobs/gang_rendezvous.hpp"
#include "broker/preemption/preemption.hpp"
#include "broker/scheduling/capacity_guard_filter.hpp"
#include "broker/scheduling/claim_refusals.hpp"
#include "broker/scheduling/fair_order.hpp"
#include "broker/scheduling/fetch_filters.hpp"
#include "broker/scheduling/gang_classes.hpp"
#include "ojs/core/object_text.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

// Where a gang's rank 0 is reached: the worker's advertised labels, else its id
// (the agent's default id is the host name) and torch's default port.
constexpr const char* kAddressLabel = "rendezvous.ojs.io/address";
constexpr const char* kPortLabel = "rendezvous.ojs.io/port";
constexpr int kDefaultPort = kDefaultRendezvousPort;

GangMemberInfo member_info(const WorkerView& worker) {
  GangMemberInfo m{worker.worker_id, worker.worker_id, std::to_string(kDefaultPort)};
  const auto& labels = worker.capabilities->labels;
  if (auto it = labels.find(kAddressLabel); it != labels.end() && !it->second.empty()) m.address = it->second;
  if (auto it = labels.find(kPortLabel); it != labels.end()) {
    try {
      if (const int port = std::stoi(it->second); port > 0 && port < 65536) m.port = std::to_string(port);
    } catch (const std::exception&) {  // an unusable label keeps the default
    }
  }
  return m;
}

std::vector<int> member_devices(const json& member) { return device_list(member.value("devices", std::string())); }

}  // namespace

bool is_gang_class(const Scheduler& scheduler, const ClassSet& classes, const std::string& class_id) {
  auto it = classes.classes.find(class_id);
  return it != classes.classes.end() && scheduler.requirements(class_id, it->second).hard.gang.size > 0;
}

json gang_envelope(const JobRecord& job, int rank) {
  json envelope = job.envelope();
  const json members = json::parse(job.get("gang_members"), nullptr, false);
  const auto rendezvous = gang_rendezvous(members, rank, job.get("gang_generation"));
  if (!rendezvous) return envelope;
  envelope.update(*rendezvous);
  // Each member runs on its own worker's devices.
  const auto devices = member_devices(members[rank]);
  if (devices.empty()) envelope.erase("ext_ml_assigned_devices");
  else envelope["ext_ml_assigned_devices"] = devices;
  return envelope;
}

std::optional<double> FetchService::first_plain_job(const std::string& queue, const KeptClasses& kept, const WorkerView& worker) {
  // A class newer than the kept set may hold the job ahead (the plain claim would
  // refresh the set only after the gang took the worker).
  const auto fresh = queues_.classes_version(queue) == kept.all.version ? nullptr : classes_of(queue, true);
  const KeptClasses& now = fresh ? *fresh : kept;
  ClassSet plain;
  plain.version = now.all.version;
  for (const auto& [id, canonical] : now.all.classes)
    if (!now.gangs.classes.count(id)) plain.classes.emplace(id, canonical);
  if (plain.classes.empty()) return std::nullopt;
  std::vector<std::string> eligible;
  for (const auto& v : run_fetch_filters(reads_, marks_, scheduler_, queue, plain, worker, assignment_options(config_)))
    if (v.judgement.eligible()) eligible.push_back(v.class_id);
  if (eligible.empty()) return std::nullopt;
  std::optional<double> best;
  for (const auto& [cls, score] : claims_.heads_of(queue, eligible).heads)
    if (!best || score < *best) best = score;
  return best;
}

void FetchService::fetch_gang(const std::string& queue, const KeptClasses& kept, const FetchRequest& request,
                            WorkerView& worker, std::vector<std::string>& jobs) {
  const ClassSet& gang_classes = kept.gangs;
  if (!worker.capabilities) return;  // a gang has hard constraints: plain workers never join
  if (gang_classes.classes.empty()) return;  // queues without gangs pay nothing

  CapacityGuards guards;
  auto verdicts = run_fetch_filters(reads_, marks_, scheduler_, queue, gang_classes, worker, assignment_options(config_), &guards);
  auto offered = gang_claim_classes(verdicts, scheduler_, gang_classes, *worker.capabilities);
  std::map<std::string, std::vector<int>> devices_of;
  for (const auto& v : verdicts)
    if (v.judgement.eligible()) devices_of[v.class_id] = v.judgement.devices;
  // Judging the other classes costs a FETCH's filters again: only when a gang could grow.
  const RivalScore rival = [&] { return first_plain_job(queue, kept, worker); };
  // Read only when elastic gangs of several tenants compete for the worker.
  const TenantShares shares = [&] { return fair_shares_of(marks_.fair_usage(queue), false); };
  // A worker kept for a preemptor (a preemption's capacity hold, still in force, as
  // the filters read it) grows no running gang.
  const bool kept_for_preemptor = guards.hold && guards.hold->backfill_start_ms == 0;
  const auto claim = claimer_.claim_gang({queue, member_info(worker), request.visibility_timeout_ms,
                                          config_.default_visibility_timeout_ms, std::move(offered.elastic), shares, kept_for_preemptor},
                                         offered.eligible, rival);
  // gang_forming (held): this worker holds its GPUs for a gang still missing members.
  const bool forming = (claim.kind == GangClaim::Kind::held || claim.kind == GangClaim::Kind::waiting) && !claim.class_id.empty();
  for (auto& v : verdicts) {
    if (forming && v.class_id == claim.class_id) {
      const auto it = gang_classes.classes.find(v.class_id);
      const int size = it == gang_classes.classes.end() ? 0 : scheduler_.requirements(v.class_id, it->second).hard.gang.size;
      v.judgement.refusals.push_back(gang_forming_refusal(claim.job_id, claim.rank, size));
    }
    diagnosis_.note(queue, v.class_id, worker.worker_id, v.judgement);
  }
  if (claim.kind == GangClaim::Kind::blocked) diagnosis_.note_refusal(queue, claim.blocked.class_id, worker.worker_id, budget_refusal(claim.blocked));
  if (claim.kind != GangClaim::Kind::held && claim.kind != GangClaim::Kind::start) return;

  // The member's GPUs count in the worker's load from the moment it is held
  // (claim_gang.lua listed the job in the worker's held set).
  json envelope;
  ml::ActiveJob active;
  std::vector<int> devices;
  if (claim.kind == GangClaim::Kind::start) {
    envelope = gang_envelope(claim.job, claim.rank);
    const json members = json::parse(claim.job.get("gang_members"), nullptr, false);
    const json member = members.is_array() && claim.rank < static_cast<int>(members.size()) ? members[claim.rank] : json::object();
    active = ml::active_job_from(envelope, member.value("gpus", 0));
    devices = member_devices(member);
  } else {
    active.job_id = claim.job_id;
    for (const auto& c : offered.eligible)
      if (c.id == claim.class_id) active.gpus = c.gpus;
    devices = devices_of[claim.class_id];
  }
  const bool counted = std::any_of(worker.load.active.begin(), worker.load.active.end(),
                                   [&](const ml::ActiveJob& j) { return j.job_id == active.job_id; });
  if (!counted) {  // a delivered member was in the load since it was held
    worker.load.active.push_back(active);
    worker.load.hold(devices, active.gpu_memory_gb);
  }
  if (claim.kind == GangClaim::Kind::start) jobs.push_back(json_text(envelope));
}

}  // namespace ojs::broker
