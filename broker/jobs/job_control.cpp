#include "broker/jobs/job_control.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "ojs/core/error.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

// ext_ml_* attributes fixed at PUSH: each has an index written with the job (a gang's
// forming, reservation waits, escalation) or is written by the broker itself.
constexpr std::array<std::string_view, 7> kFixedAtPush = {
    "ext_ml_gang", "ext_ml_reservation_id", "ext_ml_reservation_timeout_s", "ext_ml_priority_escalation",
    "ext_ml_escalation_after_s", "ext_ml_escalation_target_class", "ext_ml_assigned_devices"};

// The job hash fields PushService::prepare derives from the document that an update
// may drop (the rest are always written, or not the document's to change).
constexpr std::array<std::string_view, 4> kDerived = {"estimated_duration_s", "visibility_timeout_ms", "expires_at",
                                                      "timeout_ms"};
// Fields a job stored before the document was stored once also held (JobRecord reads
// them first): an update drops them, so the new document's values are the ones read.
constexpr std::array<std::string_view, 3> kFromDocumentNow = {"priority", "max_attempts", "gpus"};
// Fields prepare() writes that an update leaves as they are: where the job lives and
// whose it is (the tenant was resolved from the producer at PUSH, not from the editor).
constexpr std::array<std::string_view, 4> kKept = {"queue", "type", "tenant", "order_base"};

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// What a running job may change: its rank among preemption victims, nothing that
// would need it placed again.
constexpr std::array<std::string_view, 3> kRunningMayChange = {"priority", "ext_ml_priority_class", "ext_ml_preemptible"};

void check_running_patch(const std::string& id, const json& patch) {
  for (auto it = patch.begin(); it != patch.end(); ++it)
    if (!listed(kRunningMayChange, it.key()))
      throw OjsError(ErrorCode::conflict,
                     "cannot change " + it.key() + " of job " + id +
                         " while it runs: a running job changes only priority, ext_ml_priority_class and ext_ml_preemptible",
                     {{"job_id", id}, {"state", "active"}, {"field", it.key()}});
}

}  // namespace

void check_job_patch(const json& patch) {
  if (!patch.is_object()) throw invalid_field("$", "request body must be a JSON object");
  if (patch.empty()) throw invalid_field("$", "must name at least one field to change (priority or an ext_ml_* attribute)");
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& key = it.key();
    if (key != "priority" && key.rfind("ext_ml_", 0) != 0)
      throw invalid_field(key, "cannot be changed after PUSH (PATCH takes priority and ext_ml_* attributes)");
    if (listed(kFixedAtPush, key)) throw invalid_field(key, "is fixed at PUSH (cancel and push the job again to change it)");
  }
}

json JobControl::hold(const std::string& id, const std::string& who) {
  const auto t = store_.hold(jobs_.queue_of_or_404(id), id, who);
  if (t.status == TransitionStatus::conflict && t.detail == "gang_forming")
    throw OjsError(ErrorCode::conflict,
                   "cannot hold job " + id + ": it is a gang forming on its workers (hold it once it formed or went back to waiting)",
                   {{"job_id", id}, {"state", "available"}, {"reason", "gang_forming"}});
  return JobService::checked(t, id, "hold").envelope();
}

json JobControl::release(const std::string& id, const std::string& who) {
  return JobService::checked(store_.release(jobs_.queue_of_or_404(id), id, who), id, "release").envelope();
}

json JobControl::update(const std::string& id, const json& patch) {
  check_job_patch(patch);
  // The script stores the update only over the document it was computed from: a
  // concurrent change (another PATCH, an escalation) makes it read the job again.
  constexpr int kTries = 3;
  for (int tries = 1;; ++tries) {
    auto record = reads_.get(jobs_.queue_of_or_404(id), id);
    if (!record) throw job_not_found(id);
    const auto& state = record->state();
    if (state == "active") check_running_patch(id, patch);
    else if (state != "available" && state != "scheduled" && state != "retryable" && state != "pending")
      throw OjsError(ErrorCode::conflict, "cannot update job " + id + " in state '" + state + "': only a waiting or running job changes",
                     {{"job_id", id}, {"state", state}});
    if (record->has("gang_size"))
      throw OjsError(ErrorCode::conflict, "cannot update job " + id + ": a gang job's members form around it", {{"job_id", id}});
    json doc = record->document();
    if (!doc.is_object()) throw OjsError(ErrorCode::internal_error, "job " + id + " has no readable document", {{"job_id", id}});
    for (auto it = patch.begin(); it != patch.end(); ++it) {
      if (it.value().is_null()) doc.erase(it.key());
      else doc[it.key()] = it.value();
    }
    PreparedJob prepared = push_.prepare(doc, false);  // every PUSH rule, errors naming the field
    JobUpdate u{record->get("doc"), prepared.cls.class_id, prepared.cls.class_json, prepared.cls.rank_base, {}, {}, {}};
    for (auto& [field, value] : prepared.fields) {
      if (field == "order_base") u.order_base = value;
      if (!listed(kKept, field)) u.fields.emplace_back(field, value);
    }
    for (auto name : kDerived)
      if (std::none_of(u.fields.begin(), u.fields.end(), [&](const auto& f) { return f.first == name; })) u.gone.emplace_back(name);
    for (auto name : kFromDocumentNow)
      if (record->has(name)) u.gone.emplace_back(name);
    Transition t = store_.update(record->queue(), id, u);
    if (t.status != TransitionStatus::stale || tries == kTries) return JobService::checked(t, id, "update").envelope();
  }
}

}  // namespace ojs::broker
